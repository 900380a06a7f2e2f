package crdtest

import (
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Webhook is a webhook served by the test process: crdtest serves Handler
// over TLS on a free port and points the given configurations at it,
// with their caBundle filled in. Each webhook of a configuration is
// called at its clientConfig's service path (or URL path), or "/", so one
// Handler (an http.ServeMux, or controller-runtime's webhook server
// handler) may serve several.
type Webhook struct {
	// Handler answers AdmissionReviews and ConversionReviews.
	Handler http.Handler
	// Validating and Mutating are created once the CRDs are Established;
	// their clientConfigs are replaced by the URL of Handler.
	Validating []*admissionregistrationv1.ValidatingWebhookConfiguration
	Mutating   []*admissionregistrationv1.MutatingWebhookConfiguration
	// ConversionCRDs names the CRDs (of Options) whose conversion is
	// Handler: their spec.conversion is set to a Webhook strategy calling
	// ConversionPath (default "/convert") with ConversionReview v1.
	ConversionCRDs []string
	ConversionPath string
}

// webhookServers are the TLS servers of Options.Webhooks.
type webhookServers struct {
	hooks   []Webhook
	servers []*httptest.Server
}

var (
	validatingGVR = schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingwebhookconfigurations"}
	mutatingGVR   = schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "mutatingwebhookconfigurations"}
)

// startWebhooks serves each handler with httptest's TLS server, whose
// certificate is valid for 127.0.0.1: no key to generate per test.
func startWebhooks(hooks []Webhook) (*webhookServers, error) {
	w := &webhookServers{hooks: hooks}
	for i, h := range hooks {
		if h.Handler == nil {
			w.close()
			return nil, fmt.Errorf("Options.Webhooks[%d]: no Handler", i)
		}
		w.servers = append(w.servers, httptest.NewTLSServer(h.Handler))
	}
	return w, nil
}

func (w *webhookServers) close() {
	for _, s := range w.servers {
		s.Close()
	}
}

// caBundle is the PEM certificate of server i.
func (w *webhookServers) caBundle(i int) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: w.servers[i].Certificate().Raw})
}

// url is where server i answers requests for a webhook whose client
// config named path p (from its Service or URL).
func (w *webhookServers) url(i int, service *admissionregistrationv1.ServiceReference, rawURL *string) string {
	p := "/"
	switch {
	case service != nil && service.Path != nil:
		p = *service.Path
	case rawURL != nil:
		if u, err := url.Parse(*rawURL); err == nil && u.Path != "" {
			p = u.Path
		}
	}
	return w.servers[i].URL + path.Clean("/"+p)
}

// clientConfig points a webhook at server i.
func (w *webhookServers) clientConfig(i int, cc admissionregistrationv1.WebhookClientConfig) admissionregistrationv1.WebhookClientConfig {
	u := w.url(i, cc.Service, cc.URL)
	return admissionregistrationv1.WebhookClientConfig{URL: &u, CABundle: w.caBundle(i)}
}

// configurations returns the webhook configurations to create, pointed
// at their servers.
func (w *webhookServers) configurations() ([]document, error) {
	var docs []document
	for i, h := range w.hooks {
		for j, c := range h.Validating {
			c = c.DeepCopy()
			for k := range c.Webhooks {
				c.Webhooks[k].ClientConfig = w.clientConfig(i, c.Webhooks[k].ClientConfig)
			}
			d, err := toDocument(fmt.Sprintf("Options.Webhooks[%d].Validating[%d]", i, j), c, validatingGVR, "ValidatingWebhookConfiguration")
			if err != nil {
				return nil, err
			}
			docs = append(docs, d)
		}
		for j, c := range h.Mutating {
			c = c.DeepCopy()
			for k := range c.Webhooks {
				c.Webhooks[k].ClientConfig = w.clientConfig(i, c.Webhooks[k].ClientConfig)
			}
			d, err := toDocument(fmt.Sprintf("Options.Webhooks[%d].Mutating[%d]", i, j), c, mutatingGVR, "MutatingWebhookConfiguration")
			if err != nil {
				return nil, err
			}
			docs = append(docs, d)
		}
	}
	return docs, nil
}

// setConversion points the conversion of the CRDs named in
// Webhook.ConversionCRDs at their servers; it fails when one names no
// CRD of docs.
func (w *webhookServers) setConversion(docs []document) error {
	byName := map[string]*unstructured.Unstructured{}
	for _, d := range docs {
		if d.gvr == crdGVR {
			byName[d.obj.GetName()] = d.obj
		}
	}
	var errs []error
	for i, h := range w.hooks {
		p := h.ConversionPath
		if p == "" {
			p = "/convert"
		}
		u := w.url(i, nil, &p)
		for _, name := range h.ConversionCRDs {
			obj, ok := byName[name]
			if !ok {
				errs = append(errs, fmt.Errorf("Options.Webhooks[%d].ConversionCRDs: no CRD %q among Options' CRDs", i, name))
				continue
			}
			conv := map[string]any{
				"strategy": "Webhook",
				"webhook": map[string]any{
					"conversionReviewVersions": []any{"v1"},
					"clientConfig":             map[string]any{"url": u, "caBundle": base64.StdEncoding.EncodeToString(w.caBundle(i))},
				},
			}
			if err := unstructured.SetNestedField(obj.Object, conv, "spec", "conversion"); err != nil {
				errs = append(errs, fmt.Errorf("CRD %s: setting its conversion: %w", name, err))
			}
		}
	}
	return errors.Join(errs...)
}

func toDocument(source string, obj runtime.Object, gvr schema.GroupVersionResource, kind string) (document, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return document{}, fmt.Errorf("%s: %w", source, err)
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetAPIVersion(gvr.GroupVersion().String())
	u.SetKind(kind)
	return document{source: source, obj: u, gvr: gvr}, nil
}
