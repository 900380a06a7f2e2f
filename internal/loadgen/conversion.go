package loadgen

import (
	"bytes"
	"crypto/tls"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/crdserver/crdserver/internal/codec"
	"github.com/crdserver/crdserver/internal/webhook/webhookcert"
)

// Conversion values of Config.Conversion: the Widget CRD gets a second
// version, v2, with v1's schema, converted with the None strategy or by a
// webhook that this process serves. The "list-v2" workload lists at v2.
const (
	ConversionNone    = "none"
	ConversionWebhook = "webhook"
)

// widgetsV2 is the version the list-v2 workload reads.
const widgetsV2 = "v2"

// benchWebhook is the load generator's own webhook, so cheap that its CPU
// weighs little beside the server's (and is reported apart from it). For
// conversion (/convert) it rewrites apiVersion, v1 and v2 having one
// schema: it reads the review in one pass and writes each object as it
// came but for its apiVersion, as an efficient webhook would. For
// admission (/admit, admission.go) it allows at once.
type benchWebhook struct {
	srv      *http.Server
	url      string // of /convert
	caBundle []byte
	reviews  atomic.Int64
	objects  atomic.Int64
	// admissions counts AdmissionReviews.
	admissions atomic.Int64
}

func startBenchWebhook() (*benchWebhook, error) {
	cert, ca, err := webhookcert.Certificate()
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	w := &benchWebhook{caBundle: ca, url: "https://" + ln.Addr().String() + "/convert"}
	mux := http.NewServeMux()
	mux.HandleFunc("/convert", w.serve)
	mux.HandleFunc("/admit", w.serveAdmission)
	w.srv = &http.Server{Handler: mux, TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"h2", "http/1.1"}}}
	go w.srv.ServeTLS(ln, "", "")
	return w, nil
}

func (w *benchWebhook) close() { w.srv.Close() }

// reviewBuffers hold the reviews the webhook reads and the answers it
// writes, for the next review: a cold list's twenty reviews are megabytes
// each way, which in new memory each time cost the load generator the
// page faults and collections of a webhook's first minute, not of its
// steady state, on the cores the server shares.
var reviewBuffers = sync.Pool{New: func() any { return new([]byte) }}

func (w *benchWebhook) serve(rw http.ResponseWriter, r *http.Request) {
	w.reviews.Add(1)
	in, out := reviewBuffers.Get().(*[]byte), reviewBuffers.Get().(*[]byte)
	// Both go back once the answer is written: net/http's Write returns
	// when it is done with the bytes.
	defer reviewBuffers.Put(in)
	defer reviewBuffers.Put(out)
	body, err := readBody(r, *in)
	*in = body
	if err != nil {
		http.Error(rw, err.Error(), http.StatusBadRequest)
		return
	}
	ans, n, err := convertReview(body, (*out)[:0])
	*out = ans
	if err != nil {
		http.Error(rw, err.Error(), http.StatusBadRequest)
		return
	}
	w.objects.Add(int64(n))
	rw.Header().Set("Content-Type", "application/json")
	rw.Header().Set("Content-Length", strconv.Itoa(len(ans)))
	rw.Write(ans)
}

// readBody reads r's body into buf, grown to its declared length at
// once; a body of unknown length is read as codec.ReadAll reads it.
func readBody(r *http.Request, buf []byte) ([]byte, error) {
	if r.ContentLength <= 0 || r.ContentLength > codec.DefaultMaxBodyBytes {
		return codec.ReadAll(r.Body, r.ContentLength)
	}
	n := int(r.ContentLength)
	if cap(buf) < n {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	if _, err := io.ReadFull(r.Body, buf); err != nil {
		return buf, err
	}
	return buf, nil
}

// convertReview answers a compact ConversionReview (as crdserver sends
// them) with its objects at the desired apiVersion, appended to dst, and
// says how many. The review is read once, its objects split as they are
// read.
func convertReview(review, dst []byte) (ans []byte, n int, err error) {
	var av, uid, to []byte
	var objs [][]byte
	readObjects := func(t *codec.Tokens) bool {
		if !t.Consume('[') {
			return false
		}
		objs = [][]byte{}
		for first := true; !t.Consume(']'); first = false {
			if !first && !t.Consume(',') {
				return false
			}
			o, ok := t.Value()
			if !ok {
				return false
			}
			objs = append(objs, o)
		}
		return true
	}
	t := codec.MakeTokens(review)
	ok := members(&t, func(name []byte, t *codec.Tokens) (ok bool) {
		switch string(name) {
		case "apiVersion":
			av, ok = t.Value()
		case "request":
			ok = members(t, func(name []byte, t *codec.Tokens) (ok bool) {
				switch string(name) {
				case "uid":
					uid, ok = t.Value()
				case "desiredAPIVersion":
					to, ok = t.Value()
				case "objects":
					ok = readObjects(t)
				default:
					_, ok = t.Value()
				}
				return ok
			})
		default:
			_, ok = t.Value()
		}
		return ok
	})
	switch {
	case !ok || !t.End():
		return nil, 0, errors.New("malformed review")
	case av == nil:
		return nil, 0, errors.New("no apiVersion in the review")
	case uid == nil:
		return nil, 0, errors.New("no request.uid in the review")
	case to == nil:
		return nil, 0, errors.New("no request.desiredAPIVersion in the review")
	case objs == nil:
		return nil, 0, errors.New("no request.objects in the review")
	}
	b := slices.Grow(dst, len(review)+len(objs)*(len(to)+8)+200)
	b = append(b, `{"apiVersion":`...)
	b = append(b, av...)
	b = append(b, `,"kind":"ConversionReview","response":{"uid":`...)
	b = append(b, uid...)
	b = append(b, `,"result":{"status":"Success"},"convertedObjects":[`...)
	const prefix = `{"apiVersion":"`
	for i, o := range objs {
		// The server writes apiVersion first.
		end := -1
		if bytes.HasPrefix(o, []byte(prefix)) {
			end = bytes.IndexByte(o[len(prefix):], '"')
		}
		if end < 0 {
			return nil, 0, errors.New("an object does not start with its apiVersion")
		}
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"apiVersion":`...)
		b = append(b, to...)
		b = append(b, o[len(prefix)+end+1:]...)
	}
	return append(b, "]}}"...), len(objs), nil
}

// members reads the compact object at t, calling read for each member's
// value once its name is read; read must consume the value. false for
// malformed input, or when read is.
func members(t *codec.Tokens, read func(name []byte, t *codec.Tokens) bool) bool {
	if !t.Consume('{') {
		return false
	}
	for first := true; !t.Consume('}'); first = false {
		if !first && !t.Consume(',') {
			return false
		}
		name, _, ok := t.Key()
		if !ok || !read(name, t) {
			return false
		}
	}
	return true
}

// addVersion2 gives the Widget CRD a served v2 with v1's schema and the
// conversion cfg asks for.
func addVersion2(crd *unstructured.Unstructured, conversion string, hook *benchWebhook) error {
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	if len(versions) != 1 {
		return fmt.Errorf("the Widget CRD has %d versions, want 1", len(versions))
	}
	v2 := runtimeDeepCopy(versions[0]).(map[string]any)
	v2["name"], v2["storage"] = widgetsV2, false
	versions = append(versions, v2)
	if err := unstructured.SetNestedSlice(crd.Object, versions, "spec", "versions"); err != nil {
		return err
	}
	if conversion == ConversionWebhook {
		return unstructured.SetNestedMap(crd.Object, map[string]any{
			"strategy": "Webhook",
			"webhook": map[string]any{
				"conversionReviewVersions": []any{"v1"},
				"clientConfig": map[string]any{
					"url":      hook.url,
					"caBundle": base64.StdEncoding.EncodeToString(hook.caBundle),
				},
			},
		}, "spec", "conversion")
	}
	return nil
}

func runtimeDeepCopy(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = runtimeDeepCopy(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = runtimeDeepCopy(e)
		}
		return out
	}
	return v
}

// conversionNote words what the webhook saw of a list-v2 run of lists
// lists of size objects: reviews and objects converted in all and per
// list (the figure: one review per 500 objects at most, none once
// the conversions are kept), and the load generator's own CPU per list.
func conversionNote(name string, lists, size int, reviews, objects int64, cpu time.Duration) string {
	per := func(n int64) float64 {
		if lists <= 0 {
			return 0
		}
		return float64(n) / float64(lists)
	}
	return fmt.Sprintf("%s: %d lists of %d objects at v2 took %d conversion reviews of %d objects in all, %.1f reviews of %.0f objects per list; the load generator (its webhook and client) used %v CPU per list",
		name, lists, size, reviews, objects, per(reviews), per(objects), perOp(cpu, lists))
}

// webhookNote words the webhook's share of a cold list: this process's
// CPU per cold list less its CPU per warm list, whose client reads an
// answer of the same size and whose webhook has nothing to do. On a
// machine of few cores, it is CPU the server did not get.
func webhookNote(cold, warm time.Duration) string {
	return fmt.Sprintf("list-v2-cold: the webhook used about %v CPU (the load generator's %v per cold list less %v per warm list)",
		max(cold-warm, 0), cold, warm)
}
