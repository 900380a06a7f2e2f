package loadgen

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
)

// The "openapi" workload, run only when named, measures how quickly a
// schema change shows in /openapi/v3: each of --count operations patches
// the schema of one CRD of the crds workload's group (taking turns among
// them, so that a run with 500 CRDs measures one group version document of
// 500 kinds) and polls that group version's document, with If-None-Match,
// until the new property's description appears. It uses the CRDs a crds
// workload created, in this run or an earlier one kept with cleanup off;
// without any it creates one for itself.

const (
	// openapiPollInterval is how often the document is fetched while
	// waiting: short against the latencies measured, and cheap because an
	// unchanged document answers 304.
	openapiPollInterval = 5 * time.Millisecond
	// openapiTimeout bounds the wait for one change.
	openapiTimeout = 10 * time.Second
	// openapiProbe is the property each operation adds (or redescribes).
	openapiProbe = "openapiProbe"
)

// openapiLatency runs the openapi workload.
func (b *bench) openapiLatency(ctx context.Context) (Result, error) {
	names, cleanup, err := b.openapiCRDs(ctx)
	if err != nil {
		return Result{}, err
	}
	defer cleanup()
	docURL := strings.TrimRight(b.host, "/") + "/openapi/v3/apis/" + crdGroup + "/v1"
	etag := ""
	var rec Recorder
	start := time.Now()
	n := b.cfg.Count
	for i := 0; (n == 0 || i < n) && ctx.Err() == nil; i++ {
		if b.cfg.Duration > 0 && time.Since(start) > b.cfg.Duration {
			break
		}
		// Unique per run and operation, so that no earlier document can
		// contain it.
		want := fmt.Sprintf("openapi bench %s %d", b.runID, i)
		patch, err := json.Marshal([]map[string]any{{
			"op":    "add",
			"path":  "/spec/versions/0/schema/openAPIV3Schema/properties/spec/properties/" + openapiProbe,
			"value": map[string]any{"type": "string", "description": want},
		}})
		if err != nil {
			return Result{}, err
		}
		t0 := time.Now()
		_, err = b.client.Resource(crdsGVR).Patch(ctx, names[i%len(names)], types.JSONPatchType, patch, metav1.PatchOptions{})
		if err != nil {
			rec.Fail(fmt.Errorf("patching CRD %s: %w", names[i%len(names)], err))
			continue
		}
		if etag, err = b.waitForOpenAPI(ctx, docURL, etag, []byte(want)); err != nil {
			rec.Fail(err)
			continue
		}
		rec.Observe(time.Since(t0))
	}
	return Result{Name: "openapi", Summary: rec.Summary(), Elapsed: time.Since(start)}, nil
}

// waitForOpenAPI polls the document at url until it contains want,
// returning its ETag. etag is the ETag of the last document seen.
func (b *bench) waitForOpenAPI(ctx context.Context, url, etag string, want []byte) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, openapiTimeout)
	defer cancel()
	tick := time.NewTicker(openapiPollInterval)
	defer tick.Stop()
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return etag, err
		}
		req.Header.Set("Accept", "application/json")
		if etag != "" {
			req.Header.Set("If-None-Match", etag)
		}
		resp, err := b.http.Do(req)
		if err != nil {
			return etag, fmt.Errorf("fetching %s: %w", url, err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return etag, fmt.Errorf("reading %s: %w", url, err)
		}
		switch resp.StatusCode {
		case http.StatusNotModified:
		case http.StatusOK:
			etag = resp.Header.Get("Etag")
			if bytes.Contains(body, want) {
				return etag, nil
			}
		default:
			return etag, fmt.Errorf("fetching %s: HTTP %d", url, resp.StatusCode)
		}
		select {
		case <-ctx.Done():
			return etag, fmt.Errorf("%q not in %s after %v", want, url, openapiTimeout)
		case <-tick.C:
		}
	}
}

// openapiCRDs returns the names of the CRDs of the crds workload's group,
// sorted, creating one when there are none; cleanup deletes what it
// created.
func (b *bench) openapiCRDs(ctx context.Context) (names []string, cleanup func(), err error) {
	crds := b.client.Resource(crdsGVR)
	l, err := crds.List(ctx, metav1.ListOptions{LabelSelector: LabelRun})
	if err != nil {
		return nil, nil, fmt.Errorf("listing CRDs: %w", err)
	}
	for _, c := range l.Items {
		if g, _, _ := unstructured.NestedString(c.Object, "spec", "group"); g == crdGroup && c.GetDeletionTimestamp() == nil {
			names = append(names, c.GetName())
		}
	}
	if len(names) > 0 {
		slices.Sort(names)
		b.log.Info("openapi: patching existing CRDs", "crds", len(names))
		return names, func() {}, nil
	}
	obj := crdObject("openapi"+b.runID, b.runID)
	if _, err := crds.Create(ctx, obj, metav1.CreateOptions{}); err != nil {
		return nil, nil, fmt.Errorf("creating a CRD for the openapi workload: %w", err)
	}
	name := obj.GetName()
	cleanup = func() {
		if b.cfg.SkipCleanup {
			return
		}
		err := crds.Delete(context.WithoutCancel(ctx), name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			b.log.Warn("deleting the openapi workload's CRD", "crd", name, "err", err)
		}
	}
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		got, err := crds.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return conditionTrue(got, "Established"), nil
	})
	if err != nil {
		cleanup()
		return nil, nil, fmt.Errorf("waiting for CRD %s to be established: %w", name, err)
	}
	return []string{name}, cleanup, nil
}
