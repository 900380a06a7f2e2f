package forward

import (
	"bytes"
	"compress/flate"
	"compress/gzip"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"path"
	"slices"
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// rewriter points the backend's links back through the proxy.
type rewriter struct {
	// prefix is the client's path before the backend's (proxyPrefix).
	prefix string
	// backend is the backend's host[:port], host the Host header the
	// client sent.
	backend, host string
}

// link returns u as the client is to follow it. A relative link, or one
// to a host other than the backend or the API server, stays as it is.
// An absolute path gets the proxy path in front unless it starts with
// it already; a link naming the backend's host loses its scheme and
// host, so that it leads to the API server.
func (rw *rewriter) link(u *url.URL) string {
	if !strings.HasPrefix(u.Path, "/") || (u.Host != "" && u.Host != rw.backend && u.Host != rw.host) {
		return u.String()
	}
	if u.Host != rw.host {
		u.Scheme, u.Host = "", ""
	}
	if strings.HasPrefix(u.Path, rw.prefix) {
		return u.String()
	}
	slash := strings.HasSuffix(u.Path, "/")
	u.Path = path.Join(rw.prefix, u.Path)
	if slash {
		u.Path += "/"
	}
	return u.String()
}

// page rewrites the links of an HTML page (Content-Type text/html). A
// gzip or deflate page is decompressed and compressed again; one in
// another encoding is sent as it is. The error is one to answer a 500
// with.
func (rw *rewriter) page(resp *http.Response) error {
	ct, _, _ := strings.Cut(resp.Header.Get("Content-Type"), ";")
	if strings.TrimSpace(ct) != "text/html" {
		return nil
	}
	var (
		in  io.Reader = resp.Body
		out bytes.Buffer
		w   io.WriteCloser = nopCloser{&out}
	)
	switch enc := resp.Header.Get("Content-Encoding"); enc {
	case "":
	case "gzip":
		zr, err := gzip.NewReader(resp.Body)
		if err != nil {
			resp.Body.Close()
			return fmt.Errorf("errorf making gzip reader: %v", err) // upstream's words
		}
		in, w = zr, gzip.NewWriter(&out)
	case "deflate":
		zw, err := flate.NewWriter(&out, flate.BestCompression)
		if err != nil {
			return fmt.Errorf("errorf making flate writer: %v", err)
		}
		in, w = flate.NewReader(resp.Body), zw
	default:
		slog.Warn("proxied HTML page in an unknown encoding: its links are not rewritten", "encoding", enc)
		return nil
	}
	// Bounded: the page is held whole (as upstream holds it), and a
	// backend's small gzip body may decompress to anything.
	err := rewriteLinks(&capped{r: in, left: maxPage}, w, rw.link)
	resp.Body.Close()
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	resp.Body = io.NopCloser(&out)
	resp.Header.Del("Content-Length")
	resp.ContentLength = int64(out.Len())
	return nil
}

// maxPage is the most of a decompressed HTML page whose links are
// rewritten; a larger one is answered with a 500. A variable for tests.
var maxPage int64 = 64 << 20

// capped reads r, and fails once more than left bytes come.
type capped struct {
	r    io.Reader
	left int64
}

func (c *capped) Read(p []byte) (int, error) {
	if c.left < 0 {
		return 0, errPageTooLarge()
	}
	if int64(len(p)) > c.left+1 {
		p = p[:c.left+1]
	}
	n, err := c.r.Read(p)
	if c.left -= int64(n); c.left < 0 {
		return n, errPageTooLarge()
	}
	return n, err
}

func errPageTooLarge() error {
	return fmt.Errorf("the proxied HTML page is over %d MiB: its links cannot be rewritten", maxPage>>20)
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

// urlAttributes are, by HTML element, the attributes whose value is a
// URL.
var urlAttributes = map[atom.Atom][]string{
	atom.A:          {"href"},
	atom.Applet:     {"codebase"},
	atom.Area:       {"href"},
	atom.Audio:      {"src"},
	atom.Base:       {"href"},
	atom.Blockquote: {"cite"},
	atom.Body:       {"background"},
	atom.Button:     {"formaction"},
	atom.Command:    {"icon"},
	atom.Del:        {"cite"},
	atom.Embed:      {"src"},
	atom.Form:       {"action"},
	atom.Frame:      {"longdesc", "src"},
	atom.Head:       {"profile"},
	atom.Html:       {"manifest"},
	atom.Iframe:     {"longdesc", "src"},
	atom.Img:        {"longdesc", "src", "usemap"},
	atom.Input:      {"src", "usemap", "formaction"},
	atom.Ins:        {"cite"},
	atom.Link:       {"href"},
	atom.Object:     {"classid", "codebase", "data", "usemap"},
	atom.Q:          {"cite"},
	atom.Script:     {"src"},
	atom.Source:     {"src"},
	atom.Video:      {"poster", "src"},
}

// rewriteLinks copies the HTML page r to w with the URL of each
// attribute urlAttributes lists replaced by what link makes of it (a
// value that does not parse as a URL stays). Start tags are written as
// the tokenizer normalizes them; everything else as it came.
func rewriteLinks(r io.Reader, w io.Writer, link func(*url.URL) string) error {
	z := html.NewTokenizer(r)
	for {
		var err error
		switch z.Next() {
		case html.ErrorToken:
			if err := z.Err(); err != io.EOF {
				return err
			}
			return nil
		case html.StartTagToken, html.SelfClosingTagToken:
			tok := z.Token()
			for i, a := range tok.Attr {
				if !slices.Contains(urlAttributes[tok.DataAtom], a.Key) {
					continue
				}
				if u, perr := url.Parse(a.Val); perr == nil {
					tok.Attr[i].Val = link(u)
				}
			}
			_, err = io.WriteString(w, tok.String())
		default:
			_, err = w.Write(z.Raw())
		}
		if err != nil {
			return err
		}
	}
}
