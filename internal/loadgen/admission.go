package loadgen

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"

	"github.com/crdserver/crdserver/internal/codec"
)

// The "admission" workload, run only when named (widgets only), measures
// what admission adds to a write: the update workload without admission,
// then with one mutating webhook, with one validating webhook (both served
// by this process and answering at once, allowed and unpatched), and with
// one ValidatingAdmissionPolicy of two validations, each registered alone
// and matching only this run's objects. Each of Config.AdmissionRounds
// rounds runs the three, each between two runs without admission (N M N V
// N P N M …), so that a machine busy with other work weighs on each alike.
// Results are named "update/<variant>"; the notes give, per variant, the
// median over its runs of what it added to the p50 latency and to the
// server's CPU per update (with Config.ServerPIDs) against the mean of the
// runs without admission on either side, and their spread. Each round
// starts with the next variant, and each run starts on a server that has
// just collected its garbage (settleServer), so that whether a run pays
// for a garbage collection the others started does not depend on where it
// fell.
//
// With Config.AdmissionCopies N above 1, each variant registers N
// webhooks or policies instead of one (each its own configuration, all
// matching every update), and the notes also give the CPU added per one:
// what a single policy adds is a few microseconds, far inside the spread
// of runs, which N of them divide.

// Admission variants of the "admission" workload.
const (
	admissionNone       = "none"
	admissionMutating   = "mutating-webhook"
	admissionValidating = "validating-webhook"
	admissionPolicy     = "policy"
)

var admissionVariants = []string{admissionNone, admissionMutating, admissionValidating, admissionPolicy}

// admissionProbeLabel marks the dry-run objects that tell when a
// registration is in effect; the policy refuses them.
const admissionProbeLabel = "bench.crdserver.io/probe"

var (
	mutatingWebhooksGVR   = schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "mutatingwebhookconfigurations"}
	validatingWebhooksGVR = schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingwebhookconfigurations"}
	policiesGVR           = schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingadmissionpolicies"}
	policyBindingsGVR     = schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingadmissionpolicybindings"}
)

func (b *bench) admission(ctx context.Context, add func(Result)) (notes []string, err error) {
	if !b.widgets() {
		return nil, fmt.Errorf("the admission workload loads widgets, not %s", b.cfg.Resource)
	}
	if b.hook == nil {
		if b.hook, err = startBenchWebhook(); err != nil {
			return nil, fmt.Errorf("starting the admission webhook: %w", err)
		}
	}
	var runs []admissionRun
	update := func(ctx context.Context, i int) error { return b.update(ctx, i, nil) }
	run := func(round int, v string) error {
		undo, err := b.register(ctx, v)
		if err != nil {
			return fmt.Errorf("registering %s: %w", v, err)
		}
		b.log.Info("admission round", "round", round+1, "variant", v)
		b.settleServer(ctx)
		stop := watchServers(b.cfg.ServerPIDs)
		r := b.runner().Run(ctx, "update/"+v, update)
		u, uerr := stop()
		if uerr != nil {
			b.log.Warn("reading the server's usage", "err", uerr)
		}
		r.Server = u
		add(r)
		if err := undo(context.WithoutCancel(ctx)); err != nil {
			return fmt.Errorf("unregistering %s: %w", v, err)
		}
		if r.Errors > 0 || r.Ops == 0 {
			return fmt.Errorf("update/%s: %d errors, first: %s", v, r.Errors, r.FirstError)
		}
		s := admissionRun{variant: v, p50: r.P50}
		if u != nil {
			s.cpu = u.CPU / time.Duration(r.Ops)
		}
		runs = append(runs, s)
		return nil
	}
	// Every variant runs between two runs without admission (N A N B N C
	// N A …) and is compared with their mean, which cancels a machine
	// getting steadily busier or quieter across the three runs.
	measured := admissionVariants[1:]
	for round := range b.cfg.AdmissionRounds {
		// Each round starts with another variant, so that none always
		// runs on a heap the same others have just grown.
		k := round % len(measured)
		for _, v := range append(slices.Clone(measured[k:]), measured[:k]...) {
			if len(runs) == 0 {
				if err := run(round, admissionNone); err != nil {
					return nil, err
				}
			}
			if err := run(round, v); err != nil {
				return nil, err
			}
			if err := run(round, admissionNone); err != nil {
				return nil, err
			}
		}
	}
	for _, v := range measured {
		dLat, dCPU := added(runs, v)
		notes = append(notes, admissionNote(v, b.cfg.AdmissionCopies, dLat, dCPU, len(b.cfg.ServerPIDs) > 0))
	}
	var base []time.Duration
	for _, s := range runs {
		if s.variant == admissionNone {
			base = append(base, s.cpu)
		}
	}
	if len(b.cfg.ServerPIDs) > 0 {
		notes = append(notes, fmt.Sprintf("admission none: the server spends %s of CPU per update (median, spread %s)", median(base), spread(base)))
	}
	return notes, nil
}

// admissionNote words what variant v added, its copies registered at
// once, per update and, with copies, per copy.
func admissionNote(v string, copies int, dLat, dCPU []time.Duration, withCPU bool) string {
	name := v
	if copies > 1 {
		name = fmt.Sprintf("%s ×%d", v, copies)
	}
	note := fmt.Sprintf("admission %s: adds %s to the p50 latency of an update (median of %d runs, spread %s)",
		name, median(dLat), len(dLat), spread(dLat))
	if withCPU {
		note += fmt.Sprintf(" and %s of server CPU per update (spread %s)", median(dCPU), spread(dCPU))
		if copies > 1 {
			note += fmt.Sprintf(", %s per %s", median(dCPU)/time.Duration(copies), admissionUnit[v])
		}
	}
	return note
}

var admissionUnit = map[string]string{
	admissionMutating:   "webhook",
	admissionValidating: "webhook",
	admissionPolicy:     "policy",
}

// settleServer makes the server collect its garbage now, through
// /debug/pprof/heap?gc=1 as the kubeconfig's user (an admin's), when the
// run measures its CPU. A server that refuses leaves runs unsettled, which
// only makes them noisier: that is logged, once.
func (b *bench) settleServer(ctx context.Context) {
	if len(b.cfg.ServerPIDs) == 0 || b.unsettled {
		return
	}
	if b.adminHTTP == nil {
		c, err := rest.HTTPClientFor(b.admin)
		if err != nil {
			b.log.Warn("runs start without a garbage collection", "err", err)
			b.unsettled = true
			return
		}
		b.adminHTTP = c
	}
	_, release, err := b.doWith(ctx, b.adminHTTP, http.MethodGet, "/debug/pprof/heap?gc=1", nil, http.StatusOK, "*/*", "")
	if err != nil {
		b.log.Warn("runs start without a garbage collection", "err", err)
		b.unsettled = true
		return
	}
	release()
}

// admissionRun is one run of the admission workload: its variant, p50
// latency and server CPU per update.
type admissionRun struct {
	variant  string
	p50, cpu time.Duration
}

// added is what each run of variant v added to the p50 latency and to the
// CPU per update, against the mean of the runs on either side of it.
func added(runs []admissionRun, v string) (lat, cpu []time.Duration) {
	for i, r := range runs {
		if r.variant != v || i == 0 || i == len(runs)-1 {
			continue
		}
		before, after := runs[i-1], runs[i+1]
		lat = append(lat, r.p50-(before.p50+after.p50)/2)
		cpu = append(cpu, r.cpu-(before.cpu+after.cpu)/2)
	}
	return lat, cpu
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 0 {
		return (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return s[len(s)/2]
}

func spread(ds []time.Duration) string {
	if len(ds) == 0 {
		return "none"
	}
	return fmt.Sprintf("%s to %s", slices.Min(ds), slices.Max(ds))
}

// register makes variant v of admission apply to this run's widgets and
// waits until it does; undo removes it and waits until it no longer does.
func (b *bench) register(ctx context.Context, v string) (undo func(context.Context) error, err error) {
	rules := []any{map[string]any{
		"apiGroups": []any{b.widgetsGVR().Group}, "apiVersions": []any{"*"},
		"operations": []any{"CREATE", "UPDATE"}, "resources": []any{b.widgetsGVR().Resource},
	}}
	runOnly := map[string]any{"matchLabels": map[string]any{LabelRun: b.runID}}
	newWebhook := func() map[string]any {
		return map[string]any{
			"name": "bench.crdserver.io", "rules": rules, "objectSelector": runOnly,
			"clientConfig": map[string]any{
				"url":      strings.TrimSuffix(b.hook.url, "/convert") + "/admit",
				"caBundle": base64.StdEncoding.EncodeToString(b.hook.caBundle),
			},
			"sideEffects": "None", "admissionReviewVersions": []any{"v1"}, "failurePolicy": "Fail",
		}
	}
	var objects []struct {
		gvr schema.GroupVersionResource
		obj map[string]any
	}
	object := func(gvr schema.GroupVersionResource, kind, name string, fields map[string]any) {
		obj := map[string]any{"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind, "metadata": map[string]any{"name": name}}
		for k, f := range fields {
			obj[k] = f
		}
		objects = append(objects, struct {
			gvr schema.GroupVersionResource
			obj map[string]any
		}{gvr, obj})
	}
	if v == admissionNone {
		return func(context.Context) error { return nil }, nil
	}
	for i := range b.cfg.AdmissionCopies {
		name := admissionName(b.runID, i)
		webhook := newWebhook()
		switch v {
		case admissionMutating:
			webhook["reinvocationPolicy"] = "Never"
			object(mutatingWebhooksGVR, "MutatingWebhookConfiguration", name, map[string]any{"webhooks": []any{webhook}})
		case admissionValidating:
			object(validatingWebhooksGVR, "ValidatingWebhookConfiguration", name, map[string]any{"webhooks": []any{webhook}})
		case admissionPolicy:
			// Policy i refuses the probe labelled i, so that each
			// one's coming into effect shows on its own; the bench's
			// objects, unlabelled, stop at the label's absence as one
			// policy's did.
			probe := fmt.Sprintf("!('%s' in object.metadata.labels) || object.metadata.labels['%[1]s'] != '%d'", admissionProbeLabel, i)
			object(policiesGVR, "ValidatingAdmissionPolicy", name, map[string]any{"spec": map[string]any{
				"failurePolicy":    "Fail",
				"matchConstraints": map[string]any{"resourceRules": rules},
				"validations": []any{
					map[string]any{"expression": "object.spec.replicas >= 0"},
					map[string]any{"expression": probe, "message": "a probe"},
				},
			}})
			object(policyBindingsGVR, "ValidatingAdmissionPolicyBinding", name, map[string]any{"spec": map[string]any{
				"policyName": name, "validationActions": []any{"Deny"},
				"matchResources": map[string]any{"objectSelector": runOnly},
			}})
		}
	}
	undo = func(ctx context.Context) error {
		for _, o := range objects {
			name, _ := o.obj["metadata"].(map[string]any)["name"].(string)
			if err := b.client.Resource(o.gvr).Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				return err
			}
		}
		return b.waitAdmission(ctx, v, false)
	}
	for _, o := range objects {
		if _, err := b.client.Resource(o.gvr).Create(ctx, &unstructured.Unstructured{Object: o.obj}, metav1.CreateOptions{}); err != nil {
			undo(context.WithoutCancel(ctx))
			return nil, err
		}
	}
	if err := b.waitAdmission(ctx, v, true); err != nil {
		undo(context.WithoutCancel(ctx))
		return nil, err
	}
	return undo, nil
}

// waitAdmission waits until all copies of variant v admit this run's
// writes (in) or none does, by dry-run creates of a probe: every webhook
// sees it, and policy i refuses the probe labelled i.
func (b *bench) waitAdmission(ctx context.Context, v string, in bool) error {
	probe := b.template.DeepCopy()
	probe.SetName(b.cfg.Prefix + "-admission-probe")
	labels := probe.GetLabels()
	return wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		if v == admissionPolicy {
			for i := range b.cfg.AdmissionCopies {
				labels[admissionProbeLabel] = strconv.Itoa(i)
				probe.SetLabels(labels)
				_, err := b.res.Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
				if err != nil && !apierrors.IsInvalid(err) {
					return false, err
				}
				if refused := err != nil; refused != in {
					return false, nil
				}
			}
			return true, nil
		}
		before := b.hook.admissions.Load()
		if _, err := b.res.Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
			return false, err
		}
		seen := b.hook.admissions.Load() - before
		if in {
			return seen == int64(b.cfg.AdmissionCopies), nil
		}
		return seen == 0, nil
	})
}

// admissionName is the name of copy i of a variant's registrations.
func admissionName(runID string, i int) string {
	return "crdserver-bench-" + runID + "-" + strconv.Itoa(i)
}

// serveAdmission answers an AdmissionReview at once: allowed, unpatched.
// Only the uid is decoded.
func (w *benchWebhook) serveAdmission(rw http.ResponseWriter, r *http.Request) {
	w.admissions.Add(1)
	body, err := codec.ReadAll(r.Body, r.ContentLength)
	if err != nil {
		http.Error(rw, err.Error(), http.StatusBadRequest)
		return
	}
	ans, err := allowReview(body)
	if err != nil {
		http.Error(rw, err.Error(), http.StatusBadRequest)
		return
	}
	rw.Header().Set("Content-Type", "application/json")
	rw.Header().Set("Content-Length", strconv.Itoa(len(ans)))
	rw.Write(ans)
}

// allowReview answers a compact AdmissionReview (as crdserver sends them)
// with allowed, reading no more of it than its request's uid: the webhook
// shares the machine with the server it measures, and a webhook that
// answers at once should take as little of it as it can.
func allowReview(review []byte) ([]byte, error) {
	var uid []byte
	t := codec.MakeTokens(review)
	ok := members(&t, func(name []byte, t *codec.Tokens) (ok bool) {
		if string(name) != "request" {
			_, ok = t.Value()
			return ok
		}
		return members(t, func(name []byte, t *codec.Tokens) (ok bool) {
			v, ok := t.Value()
			if string(name) == "uid" {
				uid = v
			}
			return ok
		})
	})
	switch {
	case !ok || !t.End():
		return nil, errors.New("malformed review")
	case uid == nil:
		return nil, errors.New("no request.uid in the review")
	}
	b := append([]byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"uid":`), uid...)
	return append(b, `,"allowed":true}}`...), nil
}
