package conversion_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crdserver/crdserver/internal/conversion"
	"github.com/crdserver/crdserver/internal/registry"
	"github.com/crdserver/crdserver/internal/webhook"
	"github.com/crdserver/crdserver/internal/webhook/webhooktest"
)

// pizzas are n stored pizzas named p0, p1, ….
func pizzas(n int) []conversion.Object {
	objs := make([]conversion.Object, n)
	for i := range objs {
		objs[i] = conversion.Object{JSON: margherita("p"+strconv.Itoa(i), i+1), Key: "/p" + strconv.Itoa(i), Revision: int64(i + 1)}
	}
	return objs
}

// holdingWebhook serves the pizza conversion, holding every review that
// carries the pizza named hold until release is closed; failing fails
// the review that carries the pizza named so.
func holdingWebhook(t *testing.T, hold, failing string, release <-chan struct{}) (held, calls *atomic.Int64, _ conversion.EachConverter) {
	convert := func(obj map[string]any, to string) (map[string]any, error) {
		if md, _ := obj["metadata"].(map[string]any); md != nil && md["name"] == failing {
			return nil, errors.New("no pineapple on " + failing)
		}
		return pizza(obj, to)
	}
	inner := webhooktest.Conversion(convert, nil)
	held, calls = new(atomic.Int64), new(atomic.Int64)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if hold != "" && bytes.Contains(body, []byte(`"name":"`+hold+`"`)) {
			held.Add(1)
			<-release
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		inner.ServeHTTP(w, r)
	})
	srv := webhooktest.Start(t, h)
	def := pizzaDef(&registry.Conversion{URL: srv.URL + "/convert", CABundle: srv.CABundle, ReviewVersions: []string{"v1"}})
	return held, calls, conversion.New(def, &webhook.Manager{}).(conversion.EachConverter)
}

// A long list's first objects are handed over as soon as their review is
// answered, while a later review is still under way, and all of them in
// order.
func TestWebhookConvertEachInOrder(t *testing.T) {
	release := make(chan struct{})
	held, _, conv := holdingWebhook(t, "p600", "", release)
	objs := pizzas(3 * conversion.MaxBatch)
	next := 0
	err := conv.ConvertEach(context.Background(), group+"/v1beta1", objs, func(i int, b []byte) error {
		if i != next {
			t.Fatalf("object %d handed over after %d", i, next-1)
		}
		next++
		if !strings.Contains(string(b), `"name":"p`+strconv.Itoa(i)+`"`) || !strings.Contains(string(b), `"quantity"`) {
			t.Fatalf("object %d: %s", i, b)
		}
		if i == conversion.MaxBatch-1 {
			// The first review is in; the second is held.
			for held.Load() == 0 {
				time.Sleep(time.Millisecond)
			}
			close(release)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if next != len(objs) {
		t.Errorf("%d objects handed over, want %d", next, len(objs))
	}
}

// A review that fails ends the call with the webhook's message: the
// objects before it have been handed over, none after.
func TestWebhookConvertEachFails(t *testing.T) {
	_, calls, conv := holdingWebhook(t, "", "p700", nil)
	objs := pizzas(3 * conversion.MaxBatch)
	seen := 0
	err := conv.ConvertEach(context.Background(), group+"/v1beta1", objs, func(i int, b []byte) error {
		seen++
		return nil
	})
	if err == nil || !strings.Contains(err.Error(), "no pineapple on p700") {
		t.Fatalf("error %v, want the webhook's", err)
	}
	if seen != conversion.MaxBatch {
		t.Errorf("%d objects handed over, want the first review's %d", seen, conversion.MaxBatch)
	}
	// The review that succeeded was kept: its objects convert again
	// without another.
	sent := calls.Load()
	if _, err := conv.Convert(context.Background(), group+"/v1beta1", objs[:conversion.MaxBatch]); err != nil {
		t.Errorf("the first review's objects again: %v", err)
	}
	if n := calls.Load() - sent; n != 0 {
		t.Errorf("%d more reviews for objects already converted", n)
	}
}

// An error of the caller's own ends the call with it.
func TestWebhookConvertEachCallerStops(t *testing.T) {
	_, _, conv := holdingWebhook(t, "", "", nil)
	stop := errors.New("client gone")
	err := conv.ConvertEach(context.Background(), group+"/v1beta1", pizzas(2*conversion.MaxBatch), func(i int, b []byte) error {
		if i == 10 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) {
		t.Errorf("error %v, want the caller's", err)
	}
}

// Pending tells a list that will wait for the webhook from one whose
// objects were all converted before.
func TestWebhookPending(t *testing.T) {
	_, calls, conv := holdingWebhook(t, "", "", nil)
	to := group + "/v1beta1"
	objs := pizzas(3)
	if !conv.Pending(to, objs) {
		t.Error("nothing pending before the first conversion")
	}
	if _, err := conv.Convert(context.Background(), to, objs); err != nil {
		t.Fatal(err)
	}
	if conv.Pending(to, objs) {
		t.Error("pending after every object was converted")
	}
	if !conv.Pending(group+"/v1", objs) {
		t.Error("nothing pending for another version")
	}
	objs[1] = conversion.Object{JSON: margherita("p1", 100), Key: "/p1", Revision: 100}
	if !conv.Pending(to, objs) {
		t.Error("nothing pending once an object changed")
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("%d reviews, want the one conversion's", n)
	}
}
