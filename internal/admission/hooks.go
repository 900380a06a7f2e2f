package admission

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/crdserver/crdserver/internal/cel"
	"github.com/crdserver/crdserver/internal/webhook"
)

// hook is one webhook of a stored configuration, compiled once per
// revision of its configuration. Validating webhooks are held as mutating
// ones without a reinvocationPolicy.
type hook struct {
	admissionregistrationv1.MutatingWebhook
	config string
	// uid names the webhook for reinvocation: configuration and index.
	uid string

	nsSel, objSel labels.Selector
	// selErr is a selector that does not parse: the webhook then fails
	// every request it would match.
	selErr error
	conds  []condition
	// condErr is a condition that does not compile (the configuration's
	// validation refuses those; one stored before is reported here).
	condErr error

	client  webhook.ClientConfig
	timeout time.Duration
	// cached is the client of client once looked up: the lookup hashes
	// the whole clientConfig, caBundle included, and compiled hooks live
	// as long as their configuration does.
	cached atomic.Pointer[webhook.Client]

	// resourceNames restricts rule i to objects of these names (policies'
	// match resources).
	resourceNames map[int][]string
}

type condition struct {
	name string
	c    *cel.Condition
}

func (h *hook) failOpen() bool {
	return h.FailurePolicy != nil && *h.FailurePolicy == admissionregistrationv1.Ignore
}

func (h *hook) reinvocable() bool {
	return h.ReinvocationPolicy != nil && *h.ReinvocationPolicy == admissionregistrationv1.IfNeededReinvocationPolicy
}

// compiledSet caches one kind's compiled webhooks with the list of
// (name, revision) they were compiled from.
type compiledSet struct {
	mutating bool

	mu    sync.Mutex
	from  []revision
	lists [][]Stored // what from was read from (see sameLists)
	hooks []*hook
}

type revision struct {
	name string
	rev  int64
}

// sameLists reports whether a and b are the very same lists (the same
// arrays, or both empty). A source that hands the lists it handed before
// (the server's do while nothing changed) has nothing new, which is told
// without comparing each revision. A compiled set keeps the lists it was
// made from, so that their arrays are not reused for others.
func sameLists(a, b [][]Stored) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if len(a[i]) != len(b[i]) || (len(a[i]) > 0 && &a[i][0] != &b[i][0]) {
			return false
		}
	}
	return true
}

// hooks returns the current webhooks of one kind, in the order they run:
// configurations by name, webhooks in their order.
func (a *Admission) hooks(ctx context.Context, set *compiledSet) ([]*hook, error) {
	if a.source == nil {
		return nil, nil
	}
	stored, err := a.source.WebhookConfigurations(ctx, set.mutating)
	if err != nil {
		return nil, err
	}
	// Webhooks run in name order. A source's list is its own (it may
	// hand the same one to every call): it is sorted in a copy, when it
	// is not in name order already, as a watch cache's is.
	byName := func(x, y Stored) int { return strings.Compare(x.Name, y.Name) }
	if !slices.IsSortedFunc(stored, byName) {
		stored = slices.Clone(stored)
		slices.SortFunc(stored, byName)
	}
	set.mu.Lock()
	defer set.mu.Unlock()
	if sameLists(set.lists, [][]Stored{stored}) {
		return set.hooks, nil
	}
	revs := make([]revision, len(stored))
	for i, s := range stored {
		revs[i] = revision{s.Name, s.Revision}
	}
	set.lists = [][]Stored{stored}
	if slices.Equal(revs, set.from) && set.from != nil {
		return set.hooks, nil
	}
	var hooks []*hook
	for _, s := range stored {
		hs, err := compileConfiguration(s, set.mutating)
		if err != nil {
			a.log.Error("admission: skipping a webhook configuration that does not decode", "name", s.Name, "err", err)
			continue
		}
		hooks = append(hooks, hs...)
	}
	if revs == nil {
		revs = []revision{}
	}
	set.from, set.hooks = revs, hooks
	return hooks, nil
}

func compileConfiguration(s Stored, mutating bool) ([]*hook, error) {
	var webhooks []admissionregistrationv1.MutatingWebhook
	if mutating {
		var cfg admissionregistrationv1.MutatingWebhookConfiguration
		if err := json.Unmarshal(s.JSON, &cfg); err != nil {
			return nil, err
		}
		webhooks = cfg.Webhooks
	} else {
		var cfg admissionregistrationv1.ValidatingWebhookConfiguration
		if err := json.Unmarshal(s.JSON, &cfg); err != nil {
			return nil, err
		}
		webhooks = asMutating(cfg.Webhooks)
	}
	out := make([]*hook, len(webhooks))
	for i, w := range webhooks {
		out[i] = compileHook(s.Name, i, w)
	}
	return out, nil
}

// compileHook prepares one webhook: selectors parsed, conditions compiled,
// the client config and timeout in the webhook package's terms.
func compileHook(config string, i int, w admissionregistrationv1.MutatingWebhook) *hook {
	h := &hook{MutatingWebhook: w, config: config, uid: fmt.Sprintf("%s/%d", config, i)}
	var err error
	if h.nsSel, err = selector(w.NamespaceSelector); err != nil {
		h.selErr = err
	}
	if h.objSel, err = selector(w.ObjectSelector); err != nil {
		h.selErr = err
	}
	for _, mc := range w.MatchConditions {
		c, err := cel.CompileCondition(mc.Expression)
		if err != nil {
			h.condErr = fmt.Errorf("matchCondition %q: %w", mc.Name, err)
			break
		}
		h.conds = append(h.conds, condition{name: mc.Name, c: c})
	}
	cc := w.ClientConfig
	h.client.CABundle = cc.CABundle
	if cc.URL != nil {
		h.client.URL = *cc.URL
	}
	if s := cc.Service; s != nil {
		h.client.Service = &webhook.Service{Namespace: s.Namespace, Name: s.Name, Port: 443}
		if s.Path != nil {
			h.client.Service.Path = *s.Path
		}
		if s.Port != nil {
			h.client.Service.Port = *s.Port
		}
	}
	h.timeout = 10 * time.Second
	if w.TimeoutSeconds != nil {
		h.timeout = time.Duration(*w.TimeoutSeconds) * time.Second
	}
	return h
}

func selector(s *metav1.LabelSelector) (labels.Selector, error) {
	if s == nil {
		return labels.Everything(), nil
	}
	return metav1.LabelSelectorAsSelector(s)
}

// asMutating returns validating webhooks as mutating ones (the same
// fields without reinvocationPolicy), so that one code runs both.
func asMutating(vs []admissionregistrationv1.ValidatingWebhook) []admissionregistrationv1.MutatingWebhook {
	out := make([]admissionregistrationv1.MutatingWebhook, len(vs))
	for i, v := range vs {
		out[i] = admissionregistrationv1.MutatingWebhook{
			Name: v.Name, ClientConfig: v.ClientConfig, Rules: v.Rules, FailurePolicy: v.FailurePolicy,
			MatchPolicy: v.MatchPolicy, NamespaceSelector: v.NamespaceSelector, ObjectSelector: v.ObjectSelector,
			SideEffects: v.SideEffects, TimeoutSeconds: v.TimeoutSeconds, AdmissionReviewVersions: v.AdmissionReviewVersions,
			MatchConditions: v.MatchConditions,
		}
	}
	return out
}
