package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"

	"github.com/crdserver/crdserver/internal/builtin"
	"github.com/crdserver/crdserver/internal/registry"
	"github.com/crdserver/crdserver/internal/storage"
)

var apiServicesGR = schema.GroupResource{Group: "apiregistration.k8s.io", Resource: "apiservices"}

// apiServices keeps one APIService per served group/version, as
// kube-apiserver's autoregister and crdregistration controllers do:
// created for every group/version the registry serves, and, for CRDs'
// ("automanaged: true"), deleted once no stored CRD serves it. Every
// replica runs it; creates and deletes are compare-and-swap, and a
// delete is decided on a quorum read of the CRDs, so that a replica
// whose registry lags does not delete what another just created.
type apiServices struct {
	s   *Server
	reg *registry.Registry
	// kick asks for a sync (after every registry swap); it holds one.
	kick chan struct{}
}

func newAPIServices(s *Server, reg *registry.Registry) *apiServices {
	return &apiServices{s: s, reg: reg, kick: make(chan struct{}, 1)}
}

// changed asks for a sync without waiting.
func (a *apiServices) changed() {
	select {
	case a.kick <- struct{}{}:
	default:
	}
}

func (a *apiServices) run(ctx context.Context) {
	for {
		retry := time.Duration(0)
		if err := a.sync(ctx); err != nil && ctx.Err() == nil {
			a.s.log.Error("syncing APIServices", "err", err)
			retry = time.Second
		}
		var after <-chan time.Time
		if retry > 0 {
			after = time.After(retry)
		}
		select {
		case <-ctx.Done():
			return
		case <-a.kick:
		case <-after:
		}
	}
}

func (a *apiServices) sync(ctx context.Context) error {
	prefix := keyPrefix(a.s.cfg.EtcdPrefix, apiServicesGR)
	want := map[string]map[string]any{}
	now := time.Now()
	for _, d := range a.reg.Current().Definitions() {
		if d.Group == apiServicesGR.Group || d.Terminating {
			continue // the aggregator lists no APIService of its own
		}
		for _, v := range d.Versions {
			if !v.Served {
				continue
			}
			if obj := builtin.NewAPIService(schema.GroupVersion{Group: d.Group, Version: v.Name}, d.Custom(), now); obj != nil {
				want[v.Name+"."+d.Group] = obj
			}
		}
	}
	stored, err := a.s.raw.List(ctx, prefix, storage.ListOptions{})
	if err != nil {
		return err
	}
	var stale []storage.KeyValue
	for _, kv := range stored.Items {
		name := kv.Key[len(prefix):]
		if _, ok := want[name]; ok {
			delete(want, name)
			continue
		}
		var cur apiregistrationv1.APIService
		if json.Unmarshal(kv.Value, &cur) == nil && cur.Labels[builtin.AutomanagedLabel] == "true" {
			stale = append(stale, kv)
		}
	}
	var errs []error
	for name, obj := range want {
		errs = append(errs, a.s.createStored(ctx, prefix+name, obj))
	}
	if len(stale) > 0 {
		served, err := a.crdGroupVersions(ctx)
		if err != nil {
			return errors.Join(append(errs, err)...)
		}
		for _, kv := range stale {
			if served[kv.Key[len(prefix):]] {
				continue
			}
			if _, _, err := a.s.raw.Delete(ctx, kv.Key, kv.ModRevision); err != nil &&
				!errors.Is(err, storage.ErrConflict) && !errors.Is(err, storage.ErrNotFound) {
				errs = append(errs, fmt.Errorf("deleting %s: %w", kv.Key, err))
			}
		}
	}
	return errors.Join(errs...)
}

// crdGroupVersions reads the stored CRDs (a quorum read) and returns the
// APIService names of the group/versions they serve.
func (a *apiServices) crdGroupVersions(ctx context.Context) (map[string]bool, error) {
	res, err := a.s.raw.List(ctx, keyPrefix(a.s.cfg.EtcdPrefix, crdGR), storage.ListOptions{})
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, kv := range res.Items {
		var crd apiextensionsv1.CustomResourceDefinition
		if err := json.Unmarshal(kv.Value, &crd); err != nil {
			continue
		}
		for _, v := range crd.Spec.Versions {
			if v.Served {
				out[v.Name+"."+crd.Spec.Group] = true
			}
		}
	}
	return out, nil
}

// markAvailable marks a Local APIService (one that names no Service) that
// is not Available as Available, as upstream's aggregator's availability
// controller does (a create is marked already: an update that drops the
// Service, or a status write, can leave one unmarked). An APIService
// naming a Service is left as written: crdserver proxies to none. The
// write is a compare-and-swap at the revision read.
func (a *apiServices) markAvailable(ctx context.Context, name string) error {
	var svc apiregistrationv1.APIService
	own, found, err := a.s.readOwnStatus(ctx, apiServicesGR, name, &svc)
	if err != nil || !found || svc.Spec.Service != nil {
		return err
	}
	for _, c := range svc.Status.Conditions {
		if c.Type == apiregistrationv1.Available && c.Status == apiregistrationv1.ConditionTrue {
			return nil
		}
	}
	return own.writeStatus(ctx, func(status map[string]any) {
		conds, _ := status["conditions"].([]any)
		kept := make([]any, 0, len(conds)+1)
		for _, c := range conds {
			if m, _ := c.(map[string]any); m["type"] != string(apiregistrationv1.Available) {
				kept = append(kept, c)
			}
		}
		status["conditions"] = append(kept, builtin.LocalAvailable(time.Now()))
	})
}
