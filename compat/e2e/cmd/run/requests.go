package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// A requests file lists HTTP requests to send to crdserver and to
// kube-apiserver, one per line, and the runner reports where the two
// answer differently (status code, content type and encoding, Warning
// headers, and a Status body's kind, reason, message, code and details):
//
//	# a comment
//	GET /apis/nosuch.example.com/v1
//	POST /apis/apiextensions.k8s.io/v1/customresourcedefinitions @crd.json
//	PATCH /api/v1/namespaces/default @patch.json application/merge-patch+json
//	setup POST /apis/apiextensions.k8s.io/v1/customresourcedefinitions @crd.json
//	wait GET /apis/stable.example.com/v1/crontabs
//	GET /api/v1/namespaces accept=text/csv
//	GET /api/v1/namespaces/default?pretty=1 ua=curl/8.5.0 raw
//	PUT /apis/stable.example.com/v1/namespaces/default/crontabs/x @x.json body
//	GET /api/v1/namespaces?watch=1&resourceVersion=0&timeoutSeconds=1 body
//	GET /apis/apps/v1 discovery
//	GET /openapi/v3/apis/apps/v1 openapi
//	GET /apis/rbac.authorization.k8s.io/v1/clusterroles bootstrap
//	sleep 1.1s
//	PATCH /api/v1/namespaces/default/secrets/s @s.yaml application/apply-patch+yaml samerv
//
// @FILE is a body, relative to the requests file; a content type may
// follow (default application/json). "setup" sends a request without
// comparing answers; "wait" repeats one until it answers 200. "body" at
// the end compares an answer that is an object too, with what differs
// between any two servers left out: uids, resourceVersions and times.
// "discovery" at the end compares a discovery document as "body" does,
// without what crdserver knowingly serves otherwise (discovery.go).
// "raw" at the end compares an answer's text as sent, whitespace (is it
// indented, does it end in a newline), escapes and numbers included, with
// what always differs masked (times, uids, resourceVersions, ports, Table
// ages, /version's build) and one difference allowed: the order of an
// object's members, since built-in objects are written in Go struct order
// by kube-apiserver and in key order by crdserver. Each object's members
// are sorted by key before comparing, each member's text kept byte for
// byte, and the text between members too: where a server writes the same
// separator between all members of an object (",\n" and the indentation
// of their depth, or ","), the sorted text is what it would have written
// with sorted keys; an object whose separators differ is left as it is,
// so that the difference shows (see sortMembers). A Status is compared
// as text too. "ua=AGENT" sends User-Agent AGENT (a prefix is enough:
// kube-apiserver indents for "curl", "Wget" and "Mozilla/5.0"); without
// it the Go client's own is sent.
// "health" at the end compares a /healthz, /livez or /readyz answer as
// "raw" does, without kube-apiserver's checks crdserver has no counterpart
// of (health.go).
// "zpage" at the end compares a component page (/statusz, /flagz) that
// answers 200 by its form, since its text differs by design (zpages.go).
// "openapi" at the end compares the models of an OpenAPI document, v3 or
// v2, without those only of what crdserver's documents leave out
// (openapi.go), and prints a difference model by model.
// "bootstrap" at the end compares the objects a server creates at start
// as "body" does, without what differs by design (bootstrap.go).
// "samerv" at the end compares whether the answer's resourceVersion is
// the one the server's previous answer for the same path had: whether a
// write that changes nothing is stored anyway. "sleep" waits (a second
// lets a write's managedFields time move).
//
// In a body, {{backendIP}}, {{httpPort}}, {{httpsPort}} and
// {{closedPort}} name the services/proxy backend the runner starts
// (backend.go). {{uid}} and {{resourceVersion}} stand for the uid and the
// resourceVersion of the object in the server's previous answer for the
// same path (a delete's preconditions that hold), {{uid PATH}} for the
// uid in its previous answer for PATH (an owner reference), and that
// resourceVersion is left out of a Status's message as uids are (a
// precondition's conflict quotes the stored object's).
//
// A line "kubectl ARGS..." runs kubectl against both servers and
// compares what it prints (see kubectl.go); it mixes with requests.
type requestLine struct {
	line        int
	mode        string // "", "setup", "wait" or "sleep"
	method      string
	path        string
	body        []byte
	contentType string
	accept      string
	userAgent   string
	compareBody bool
	discovery   bool // compare a discovery document, as discovery.go says
	raw         bool
	zpage       bool // compare a component page's form, as zpages.go says
	health      bool // compare a health answer's checks, as health.go says
	openapi     bool // compare an OpenAPI document's models, as openapi.go says
	bootstrap   bool // compare objects created at start, as bootstrap.go says
	sameRV      bool
	sleep       time.Duration // of a sleep line
	// Of a kubectl line (kubectl.go): its arguments, its standard input
	// and the kubectl release that runs it.
	kubectl        []string
	stdin          []byte
	kubectlVersion string
}

func readRequests(file string) ([]requestLine, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []requestLine
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 || strings.HasPrefix(fields[0], "#") {
			continue
		}
		if fields[0] == "sleep" && len(fields) == 2 {
			d, err := time.ParseDuration(fields[1])
			if err != nil {
				return nil, fmt.Errorf("%s:%d: %w", file, n, err)
			}
			out = append(out, requestLine{line: n, mode: "sleep", sleep: d})
			continue
		}
		r := requestLine{line: n, contentType: "application/json"}
		if fields[0] == "setup" || fields[0] == "wait" {
			r.mode, fields = fields[0], fields[1:]
		}
		if len(fields) > 0 && fields[0] == "kubectl" {
			text := strings.TrimSpace(sc.Text())
			text = strings.TrimSpace(strings.TrimPrefix(text, r.mode))
			if err := parseKubectl(&r, strings.TrimPrefix(text, "kubectl"), filepath.Dir(file)); err != nil {
				return nil, fmt.Errorf("%s:%d: %w", file, n, err)
			}
			out = append(out, r)
			continue
		}
		// Modifiers end the line, in any order.
	modifiers:
		for len(fields) > 2 {
			last := fields[len(fields)-1]
			switch {
			case last == "samerv":
				r.sameRV = true
			case last == "body":
				r.compareBody = true
			case last == "raw":
				r.raw = true
			case last == "zpage":
				r.zpage = true
			case last == "health":
				r.health = true
			case last == "discovery":
				r.compareBody, r.discovery = true, true
			case last == "openapi":
				r.compareBody, r.openapi = true, true
			case last == "bootstrap":
				r.compareBody, r.bootstrap = true, true
			case strings.HasPrefix(last, "accept="):
				r.accept = strings.TrimPrefix(last, "accept=")
			case strings.HasPrefix(last, "ua="):
				r.userAgent = strings.TrimPrefix(last, "ua=")
			default:
				break modifiers
			}
			fields = fields[:len(fields)-1]
		}
		if len(fields) < 2 || len(fields) > 4 {
			return nil, fmt.Errorf("%s:%d: want [setup|wait] METHOD PATH [@BODY [CONTENT-TYPE]] [accept=TYPE] [ua=AGENT] [body|raw|zpage|health] [samerv]", file, n)
		}
		r.method, r.path = fields[0], fields[1]
		if len(fields) > 2 {
			if !strings.HasPrefix(fields[2], "@") {
				return nil, fmt.Errorf("%s:%d: a body is @FILE", file, n)
			}
			if r.body, err = os.ReadFile(filepath.Join(filepath.Dir(file), fields[2][1:])); err != nil {
				return nil, fmt.Errorf("%s:%d: %w", file, n, err)
			}
		}
		if len(fields) > 3 {
			r.contentType = fields[3]
		}
		out = append(out, r)
	}
	return out, sc.Err()
}

// answer is what a server said, reduced to what must agree.
type answer struct {
	code        int
	contentType string
	// encoding is the answer's Content-Encoding: the client asks for gzip,
	// as Go clients do, and reads the answer decompressed.
	encoding string
	// warnings are the answer's Warning headers, in order: what kubectl
	// prints as "Warning: ..." (unknown fields, deprecated versions).
	warnings string
	body     string // a Status's fields, or the text of a non-JSON answer
}

func (a answer) String() string {
	s := fmt.Sprintf("%d %s", a.code, a.contentType)
	if a.encoding != "" {
		s += " (" + a.encoding + ")"
	}
	if a.warnings != "" {
		s += " warnings=" + a.warnings
	}
	return s + " " + a.body
}

type requester struct {
	name       string
	client     *http.Client
	url        string
	kubeconfig string            // the admin's, for kubectl lines
	home       string            // kubectl's home: its discovery cache
	lastRV     map[string]string // of the previous answer by path that had one
	lastUID    map[string]string // likewise
	// backend fills in the services/proxy backend's {{...}} in bodies;
	// nil leaves them.
	backend *strings.Replacer
}

func newRequester(p *process, home string) (*requester, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", p.kubeconfig)
	if err != nil {
		return nil, err
	}
	c, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, err
	}
	return &requester{name: p.name, client: c, url: strings.TrimSuffix(cfg.Host, "/"), kubeconfig: p.kubeconfig, home: home, lastRV: map[string]string{}, lastUID: map[string]string{}}, nil
}

func (q *requester) do(ctx context.Context, r requestLine) (answer, error) {
	path, _, _ := strings.Cut(r.path, "?")
	prevRV := q.lastRV[path]
	body := fill(r.body, q.lastUID[path], prevRV, q.lastUID)
	if body != nil && q.backend != nil {
		body = []byte(q.backend.Replace(string(body)))
	}
	req, err := http.NewRequestWithContext(ctx, r.method, q.url+r.path, bytes.NewReader(body))
	if err != nil {
		return answer{}, err
	}
	if body != nil {
		req.Header.Set("Content-Type", r.contentType)
	}
	if r.accept != "" {
		req.Header.Set("Accept", r.accept)
	}
	if r.userAgent != "" {
		req.Header.Set("User-Agent", r.userAgent)
	}
	resp, err := q.client.Do(req)
	if err != nil {
		return answer{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return answer{}, err
	}
	a := answer{code: resp.StatusCode, contentType: resp.Header.Get("Content-Type"), encoding: resp.Header.Get("Content-Encoding")}
	if w := resp.Header.Values("Warning"); len(w) > 0 {
		q, _ := json.Marshal(w)
		a.warnings = string(q)
	}
	if resp.Uncompressed {
		// The transport took the header away when it decompressed.
		a.encoding = "gzip"
	}
	var meta struct {
		Metadata struct{ ResourceVersion, UID string } `json:"metadata"`
	}
	kept := false
	if json.Unmarshal(b, &meta) == nil && meta.Metadata.ResourceVersion != "" {
		kept = meta.Metadata.ResourceVersion == prevRV
		q.lastRV[path] = meta.Metadata.ResourceVersion
		if meta.Metadata.UID != "" {
			q.lastUID[path] = meta.Metadata.UID
		}
	}
	var status struct {
		Kind    string          `json:"kind"`
		Status  string          `json:"status"`
		Message string          `json:"message"`
		Reason  string          `json:"reason"`
		Details json.RawMessage `json:"details"`
		Code    int             `json:"code"`
	}
	switch {
	case strings.HasPrefix(a.contentType, "application/vnd.kubernetes.protobuf"):
		a.body = "(a protobuf object)" // objects differ in uid and times
	case r.zpage && resp.StatusCode == http.StatusOK:
		a.body = "page " + pageForm(a.contentType, b)
	case r.health:
		a.body = "health " + rawText([]byte(healthText(q.name, string(b))))
	case r.raw:
		a.body = "raw " + rawText(b)
	case !strings.HasPrefix(a.contentType, "application/json"):
		a.body = strings.TrimSpace(string(b))
	case json.Unmarshal(b, &status) == nil && status.Kind == "Status":
		var details map[string]any
		json.Unmarshal(status.Details, &details)
		delete(details, "uid")
		if causes, ok := details["causes"].([]any); ok {
			for _, c := range causes {
				if c, ok := c.(map[string]any); ok {
					if m, ok := c["message"].(string); ok {
						c["message"] = stableObjects(m)
					}
				}
			}
		}
		d, _ := json.Marshal(details)
		// A uid or resourceVersion the server made (a precondition's
		// message quotes the stored object's) is left out; one the
		// request sent stays.
		msg := maskMessage(stableObjects(status.Message), body, prevRV)
		a.body = fmt.Sprintf("Status %s reason=%s code=%d message=%q details=%s", status.Status, status.Reason, status.Code, msg, d)
	case r.compareBody:
		// Numbers compare as written: float64 would hide a difference
		// in an int64's last digits.
		var obj any
		if err := unmarshalNumbers(b, &obj); err != nil {
			// A watch: its events, one JSON object after another.
			events, ok := jsonStream(b)
			if !ok {
				a.body = "(not JSON)"
				break
			}
			n, _ := json.Marshal(stable(events))
			a.body = "events " + string(n)
			break
		}
		if r.discovery {
			obj = comparableDiscovery(q.name, obj)
		}
		if r.openapi {
			obj = comparableOpenAPI(q.name, obj)
		}
		if r.bootstrap {
			obj = comparableBootstrap(obj)
		}
		n, _ := json.Marshal(stable(obj))
		a.body = "object " + string(n)
	default:
		a.body = "(an object)"
	}
	if r.sameRV {
		a.body += fmt.Sprintf(" (resourceVersion kept: %v)", kept)
	}
	return a, nil
}

// fill is body with {{uid}} and {{resourceVersion}} replaced by uid and
// rv, those of the server's previous answer for the request's path, and
// {{uid PATH}} by uids[PATH], the uid of its previous answer for PATH.
func fill(body []byte, uid, rv string, uids map[string]string) []byte {
	if body == nil {
		return nil
	}
	body = bytes.ReplaceAll(body, []byte("{{uid}}"), []byte(uid))
	body = uidOfPath.ReplaceAllFunc(body, func(m []byte) []byte {
		return []byte(uids[string(uidOfPath.FindSubmatch(m)[1])])
	})
	return bytes.ReplaceAll(body, []byte("{{resourceVersion}}"), []byte(rv))
}

var uidOfPath = regexp.MustCompile(`\{\{uid (/[^}\s]*)\}\}`)

// maskMessage is a Status's message without what the server made: uids
// and rv, the resourceVersion of its previous answer for the path (a
// precondition's conflict quotes the stored object's), each kept where
// the request's body sent it.
func maskMessage(msg string, body []byte, rv string) string {
	msg = uidText.ReplaceAllStringFunc(msg, func(uid string) string {
		if bytes.Contains(body, []byte(uid)) {
			return uid
		}
		return "-"
	})
	if rv == "" || bytes.Contains(body, []byte(`"`+rv+`"`)) {
		return msg
	}
	// Only where a message quotes it after naming a ResourceVersion (a
	// precondition's "ResourceVersion in record (N)"): a number elsewhere
	// that happens to be the same ("no more than 253 characters") stays.
	return regexp.MustCompile(`(ResourceVersion[^0-9]{0,30})`+regexp.QuoteMeta(rv)+`\b`).ReplaceAllString(msg, "${1}-")
}

// stable is v without what two servers never agree on: uids and
// resourceVersions become "-", and so does every string that is a time,
// every uid in a string (a Job's controller-uid label) or a key (an
// owner reference's in managedFields), a Table cell that is an age ("0s"
// on one, "1s" on the other), and the generated suffix of a pod's service
// account token volume, a string that is that volume's name and nothing
// else ("kube-api-access-7x2kq").
func stable(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, y := range x {
			if uidText.MatchString(k) {
				delete(x, k)
				k = uidText.ReplaceAllString(k, "-")
				x[k] = y
			}
			if _, ok := y.(string); ok && (k == "uid" || k == "resourceVersion") {
				x[k] = "-"
				continue
			}
			if cells, ok := y.([]any); ok && k == "cells" {
				for i, c := range cells {
					if s, ok := c.(string); ok && ageCell.MatchString(s) {
						cells[i] = "-"
					}
				}
			}
			x[k] = stable(y)
		}
	case []any:
		for i, y := range x {
			x[i] = stable(y)
		}
	case string:
		if _, err := time.Parse(time.RFC3339, x); err == nil {
			return "-"
		}
		if tokenVolume.MatchString(x) {
			return tokenVolumePrefix + "-"
		}
		return uidText.ReplaceAllString(x, "-")
	}
	return v
}

// stableObjects rewrites the objects a message quotes (a patch's result,
// which upstream quotes whole as the invalid value, and again in a
// decoding error) as stable rewrites an answer: their uids,
// resourceVersions and times left out, their keys sorted (a built-in
// object's keys are in its Go type's order upstream).
func stableObjects(msg string) string {
	const prefix = "Invalid value: "
	var b strings.Builder
	for i := 0; i < len(msg); {
		if strings.HasPrefix(msg[i:], prefix+`"`) {
			b.WriteString(prefix)
			i += len(prefix)
			if q, err := strconv.QuotedPrefix(msg[i:]); err == nil {
				i += len(q)
				if s, err := strconv.Unquote(q); err == nil {
					q = strconv.Quote(stableObjects(s))
				}
				b.WriteString(q)
			}
			continue
		}
		if msg[i] == '{' {
			dec := json.NewDecoder(strings.NewReader(msg[i:]))
			var obj map[string]any
			if dec.Decode(&obj) == nil {
				n, _ := json.Marshal(stable(obj))
				b.Write(n)
				i += int(dec.InputOffset())
				continue
			}
		}
		b.WriteByte(msg[i])
		i++
	}
	return b.String()
}

// unmarshalNumbers is json.Unmarshal keeping numbers as json.Number.
func unmarshalNumbers(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("more than one JSON value")
	}
	return nil
}

// jsonStream decodes b as JSON values one after another (a watch's
// events, numbers as json.Number); ok is false unless all of b is such
// values.
func jsonStream(b []byte) (values []any, ok bool) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	for {
		var v any
		err := dec.Decode(&v)
		if err == io.EOF {
			return values, len(values) > 0
		}
		if err != nil {
			return nil, false
		}
		values = append(values, v)
	}
}

// tokenVolumePrefix starts the name of a pod's service account token
// volume.
const tokenVolumePrefix = "kube-api-access-"

var (
	// tokenVolume is the name of the service account token volume the
	// ServiceAccount admission plugin gives a pod: its prefix and five
	// characters upstream's name generator draws.
	tokenVolume = regexp.MustCompile(`^` + tokenVolumePrefix + `[bcdfghjklmnpqrstvwxz2456789]{5}$`)
	uidText     = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
	ageCell     = regexp.MustCompile(`^[0-9]+[smhdy]([0-9]+[smh])?$`)
)

// runRequests sends file's requests to a crdserver and a kube-apiserver
// and prints each difference; failed reports any.
func runRequests(ctx context.Context, paths paths, dir, file string) (failed bool, err error) {
	reqs, err := readRequests(file)
	if err != nil {
		return false, err
	}
	be, err := startBackend()
	if err != nil {
		fmt.Printf("no services/proxy backend, {{backendIP}} and the ports are left in bodies: %v\n", err)
	} else {
		defer be.close()
	}
	var servers []*requester
	for _, name := range []string{"crdserver", "kube-apiserver"} {
		sdir := filepath.Join(dir, name)
		if err := os.MkdirAll(sdir, 0o755); err != nil {
			return false, err
		}
		var p *process
		if name == "crdserver" {
			p, err = startCrdserver(ctx, paths, sdir)
		} else {
			p, err = startKubeAPIServer(ctx, paths, sdir)
		}
		if err != nil {
			return false, fmt.Errorf("%s: %w", name, err)
		}
		defer p.stop()
		q, err := newRequester(p, filepath.Join(sdir, "kubectl-home"))
		if err != nil {
			return false, err
		}
		if be != nil {
			q.backend = be.vars
		}
		servers = append(servers, q)
	}
	same := 0
	for _, r := range reqs {
		if r.mode == "sleep" {
			// An interrupt ends a sleep (one that keeps the servers up
			// for probing), so that the servers are stopped.
			select {
			case <-time.After(r.sleep):
			case <-ctx.Done():
				return false, ctx.Err()
			}
			continue
		}
		var answers []answer
		for _, q := range servers {
			do, ok := q.do, http.StatusOK
			if r.kubectl != nil {
				do, ok = func(ctx context.Context, r requestLine) (answer, error) {
					return kubectlRun(ctx, r, q.kubeconfig, q.home, filepath.Dir(file))
				}, 0
			}
			a, err := do(ctx, r)
			for deadline := time.Now().Add(30 * time.Second); r.mode == "wait" && (err != nil || a.code != ok) && time.Now().Before(deadline); {
				time.Sleep(100 * time.Millisecond)
				a, err = do(ctx, r)
			}
			if err != nil {
				return false, fmt.Errorf("line %d: %s: %w", r.line, q.name, err)
			}
			answers = append(answers, a)
		}
		if r.mode != "" {
			continue
		}
		if a, b := answers[0], answers[1]; a != b {
			failed = true
			if r.kubectl != nil {
				fmt.Printf("line %d: kubectl %s\n  crdserver exit %d, kube-apiserver exit %d; - crdserver, + kube-apiserver:\n%s", r.line, r.path, a.code, b.code, lineDiff(a.body, b.body))
				continue
			}
			var models string
			if r.openapi && a.body != b.body {
				models = modelsDiff(a.body, b.body)
				a.body, b.body = "(models differ, below)", "(models differ, below)"
			}
			fmt.Printf("line %d: %s %s\n  crdserver:      %s\n  kube-apiserver: %s\n%s", r.line, r.method, r.path, a, b, models)
			continue
		}
		same++
	}
	fmt.Printf("%d requests answered alike, %d differently\n", same, countCompared(reqs)-same)
	return failed, nil
}

func countCompared(reqs []requestLine) int {
	n := 0
	for _, r := range reqs {
		if r.mode == "" {
			n++
		}
	}
	return n
}
