package conversion_test

import (
	"context"
	"net/http"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/crdserver/crdserver/internal/conversion"
	"github.com/crdserver/crdserver/internal/registry"
	"github.com/crdserver/crdserver/internal/webhook"
)

// TestRequest converts a request at the non-storage version both ways:
// to storage before a write, and back for the answer.
func TestRequest(t *testing.T) {
	ctx := context.Background()
	r := conversion.Request{Def: pizzaDef(nil), Version: "v1beta1"}
	if got := r.APIVersion(); got != group+"/v1beta1" {
		t.Errorf("APIVersion = %q", got)
	}
	obj := map[string]any{"apiVersion": group + "/v1beta1", "kind": "Pizza"}
	if r.StoredAsIs(obj) {
		t.Error("a v1beta1 body is not stored as it is at storage version v1alpha1")
	}
	stored, err := r.ToStorage(ctx, obj)
	if err != nil || stored["apiVersion"] != group+"/v1alpha1" {
		t.Fatalf("ToStorage: %v, %v", stored, err)
	}
	back, err := r.ToRequest(ctx, stored)
	if err != nil || back["apiVersion"] != group+"/v1beta1" {
		t.Errorf("ToRequest: %v, %v", back, err)
	}
	if !(conversion.Request{Def: pizzaDef(nil), Version: "v1alpha1"}).StoredAsIs(obj) {
		t.Error("a request at the storage version is stored as it is")
	}
	if hooks, err := r.ToHooks(ctx, obj); err != nil || hooks["apiVersion"] != group+"/v1beta1" {
		t.Errorf("custom resources' hooks see the request's version: %v, %v", hooks, err)
	}
}

// TestRequestFailed answers a broken conversion webhook as upstream: the
// converter's message in a 500 without a reason.
func TestRequestFailed(t *testing.T) {
	def := pizzaDef(&registry.Conversion{URL: "https://127.0.0.1:1/convert", ReviewVersions: []string{"v1"}})
	def.Converter = conversion.New(def, &webhook.Manager{})
	r := conversion.Request{Def: def, Version: "v1beta1"}
	_, err := r.FromStored(context.Background(), []conversion.Object{{JSON: margherita("m", 5)}})
	st, ok := err.(apierrors.APIStatus)
	if !ok {
		t.Fatalf("error %v (%T) is not an API status", err, err)
	}
	if s := st.Status(); s.Code != http.StatusInternalServerError || s.Reason != "" || s.Message == "" {
		t.Errorf("status %+v, want a 500 with the webhook's error and no reason", s)
	}
	if again := conversion.Failed(err); again != err {
		t.Errorf("Failed rewraps an API status: %v", again)
	}
}
