package loadgen

import (
	"bytes"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/crdserver/crdserver/internal/webhook/webhooktest"
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

// benchWebhook is the load generator's own webhook: for conversion
// (/convert) it rewrites apiVersion, without decoding the objects, and for
// admission (/admit, admission.go) it allows at once, so that its CPU
// weighs little beside the server's.
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
	cert, ca, err := webhooktest.Certificate()
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

type benchReview struct {
	APIVersion string `json:"apiVersion"`
	Request    *struct {
		UID               string            `json:"uid"`
		DesiredAPIVersion string            `json:"desiredAPIVersion"`
		Objects           []json.RawMessage `json:"objects"`
	} `json:"request,omitempty"`
}

func (w *benchWebhook) serve(rw http.ResponseWriter, r *http.Request) {
	w.reviews.Add(1)
	var rev benchReview
	if err := json.NewDecoder(r.Body).Decode(&rev); err != nil || rev.Request == nil {
		http.Error(rw, "bad review", http.StatusBadRequest)
		return
	}
	// The answer is written by hand, the objects as they came but for
	// apiVersion, which the server puts first.
	var b bytes.Buffer
	quote := func(s string) { q, _ := json.Marshal(s); b.Write(q) }
	b.WriteString(`{"apiVersion":`)
	quote(rev.APIVersion)
	b.WriteString(`,"kind":"ConversionReview","response":{"uid":`)
	quote(rev.Request.UID)
	b.WriteString(`,"result":{"status":"Success"},"convertedObjects":[`)
	const prefix = `{"apiVersion":"`
	for i, o := range rev.Request.Objects {
		if i > 0 {
			b.WriteByte(',')
		}
		end := -1
		if bytes.HasPrefix(o, []byte(prefix)) {
			end = bytes.IndexByte(o[len(prefix):], '"')
		}
		if end < 0 {
			http.Error(rw, "an object does not start with its apiVersion", http.StatusBadRequest)
			return
		}
		b.WriteString(`{"apiVersion":`)
		quote(rev.Request.DesiredAPIVersion)
		b.Write(o[len(prefix)+end+1:])
	}
	b.WriteString("]}}")
	w.objects.Add(int64(len(rev.Request.Objects)))
	rw.Header().Set("Content-Type", "application/json")
	rw.Write(b.Bytes())
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
