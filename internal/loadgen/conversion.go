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

// benchWebhook is the load generator's own conversion webhook: it
// rewrites apiVersion, without decoding the objects, so that its CPU
// weighs little beside the server's.
type benchWebhook struct {
	srv      *http.Server
	url      string
	caBundle []byte
	reviews  atomic.Int64
	objects  atomic.Int64
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
	w.srv = &http.Server{Handler: http.HandlerFunc(w.serve), TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"h2", "http/1.1"}}}
	go w.srv.ServeTLS(ln, "", "")
	return w, nil
}

func (w *benchWebhook) close() { w.srv.Close() }

type benchReview struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Request    *struct {
		UID               string            `json:"uid"`
		DesiredAPIVersion string            `json:"desiredAPIVersion"`
		Objects           []json.RawMessage `json:"objects"`
	} `json:"request,omitempty"`
	Response *benchReviewResponse `json:"response,omitempty"`
}

type benchReviewResponse struct {
	UID              string            `json:"uid"`
	ConvertedObjects []json.RawMessage `json:"convertedObjects"`
	Result           struct {
		Status string `json:"status"`
	} `json:"result"`
}

func (w *benchWebhook) serve(rw http.ResponseWriter, r *http.Request) {
	w.reviews.Add(1)
	var rev benchReview
	if err := json.NewDecoder(r.Body).Decode(&rev); err != nil || rev.Request == nil {
		http.Error(rw, "bad review", http.StatusBadRequest)
		return
	}
	resp := &benchReviewResponse{UID: rev.Request.UID}
	resp.Result.Status = "Success"
	to, _ := json.Marshal(rev.Request.DesiredAPIVersion)
	for _, o := range rev.Request.Objects {
		var head struct {
			APIVersion string `json:"apiVersion"`
		}
		json.Unmarshal(o, &head)
		from, _ := json.Marshal(head.APIVersion)
		resp.ConvertedObjects = append(resp.ConvertedObjects,
			bytes.Replace(o, append([]byte(`"apiVersion":`), from...), append([]byte(`"apiVersion":`), to...), 1))
	}
	w.objects.Add(int64(len(rev.Request.Objects)))
	rev.Request, rev.Response = nil, resp
	rw.Header().Set("Content-Type", "application/json")
	json.NewEncoder(rw).Encode(rev)
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
