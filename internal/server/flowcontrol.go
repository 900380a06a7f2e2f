package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/uuid"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/crdserver/crdserver/internal/apply"
	"github.com/crdserver/crdserver/internal/builtin"
	"github.com/crdserver/crdserver/internal/controllers"
	"github.com/crdserver/crdserver/internal/flowcontrol"
	"github.com/crdserver/crdserver/internal/handler"
	"github.com/crdserver/crdserver/internal/registry"
	"github.com/crdserver/crdserver/internal/storage"
	"github.com/crdserver/crdserver/internal/watchcache"
)

var (
	flowSchemasGR    = schema.GroupResource{Group: flowcontrolv1.GroupName, Resource: "flowschemas"}
	priorityLevelsGR = schema.GroupResource{Group: flowcontrolv1.GroupName, Resource: "prioritylevelconfigurations"}
)

// The field managers of upstream's APF configuration producer (which
// writes the bootstrap objects) and consumer (which applies FlowSchemas'
// Dangling condition).
const (
	apfProducer = "api-priority-and-fairness-config-producer-v1"
	apfConsumer = "api-priority-and-fairness-config-consumer-v1"
)

// apfConfig keeps upstream's APF configuration as kube-apiserver's
// producer does: the mandatory FlowSchemas and PriorityLevelConfigurations
// exist with their fixed specs (a deleted one comes back), the suggested
// ones exist and, while annotated apf.kubernetes.io/autoupdate-spec=true,
// keep upstream's specs; objects so annotated that upstream no longer
// suggests are deleted. And as its consumer: each FlowSchema's Dangling
// condition says whether its priority level exists. Writes are
// compare-and-swap at the revision read, so replicas agree.
type apfConfig struct {
	s            *Server
	fsDef, plDef *registry.Definition
	// status applies FlowSchemas' status as the consumer.
	status *apply.Manager
	now    func() time.Time
	// classifier is compiled from the stored objects, again whenever one
	// changes; requests read it (current).
	classifier atomic.Pointer[flowcontrol.Classifier]
	// consumed is set once the classifier was first compiled from the
	// stored configuration (upstream's config consumer has read it).
	consumed  atomic.Bool
	mandatory flowcontrol.Mandatory
}

func newAPFConfig(s *Server, defs []*registry.Definition) *apfConfig {
	c := &apfConfig{s: s, now: time.Now}
	for _, d := range defs {
		switch d.GroupResource() {
		case flowSchemasGR:
			c.fsDef = d
		case priorityLevelsGR:
			c.plDef = d
		}
	}
	c.status = statusFieldManager(c.fsDef, "v1")
	for _, fs := range builtin.BootstrapFlowSchemas() {
		if builtin.IsMandatoryFlowcontrolName(fs.Name) {
			c.mandatory.FlowSchemas = append(c.mandatory.FlowSchemas, fs)
		}
	}
	for _, pl := range builtin.BootstrapPriorityLevels() {
		if builtin.IsMandatoryFlowcontrolName(pl.Name) {
			c.mandatory.PriorityLevels = append(c.mandatory.PriorityLevels, pl)
		}
	}
	c.classifier.Store(flowcontrol.New(nil, nil, c.mandatory))
	return c
}

// current is the classifier of the objects stored.
func (c *apfConfig) current() *flowcontrol.Classifier { return c.classifier.Load() }

// reclassify compiles the classifier again from the cached objects.
func (c *apfConfig) reclassify(ctx context.Context) error {
	fsStore, _ := c.s.stores.Store(flowSchemasGR)
	plStore, _ := c.s.stores.Store(priorityLevelsGR)
	var schemas []flowcontrolv1.FlowSchema
	var levels []flowcontrolv1.PriorityLevelConfiguration
	for _, l := range []struct {
		st  *handler.Store
		add func([]byte) error
	}{
		{fsStore, func(b []byte) error {
			var fs flowcontrolv1.FlowSchema
			err := json.Unmarshal(b, &fs)
			schemas = append(schemas, fs)
			return err
		}},
		{plStore, func(b []byte) error {
			var pl flowcontrolv1.PriorityLevelConfiguration
			err := json.Unmarshal(b, &pl)
			levels = append(levels, pl)
			return err
		}},
	} {
		res, err := l.st.Cache.List(ctx, watchcache.ListOptions{ResourceVersion: "0"})
		if err != nil {
			return err
		}
		for _, it := range res.Items {
			if err := l.add(it.JSON()); err != nil {
				return err
			}
		}
	}
	c.classifier.Store(flowcontrol.New(schemas, levels, c.mandatory))
	c.consumed.Store(true)
	return nil
}

// run ensures the configuration at start, then every minute as upstream
// does, and at once for a bootstrap object deleted or changed; and keeps
// the Dangling conditions.
func (c *apfConfig) run(ctx context.Context) {
	fsStore, _ := c.s.stores.Store(flowSchemasGR)
	plStore, _ := c.s.stores.Store(priorityLevelsGR)
	schemas := &controllers.Each{Name: "APF FlowSchemas", Cache: fsStore.Cache, Deletes: true, Log: c.s.log, Sync: c.syncFlowSchema}
	levels := &controllers.Each{Name: "APF priority levels", Cache: plStore.Cache, Deletes: true, Log: c.s.log, Sync: func(ctx context.Context, name string) error {
		if err := c.ensureLevel(ctx, name); err != nil {
			return err
		}
		if err := c.reclassify(ctx); err != nil {
			return err
		}
		// The schemas that name the level may dangle now, or no longer.
		return c.eachFlowSchema(ctx, fsStore, func(fs *flowcontrolv1.FlowSchema) error {
			if fs.Spec.PriorityLevelConfiguration.Name != name {
				return nil
			}
			return c.syncDangling(ctx, fs.Name)
		})
	}}
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() { schemas.Run(ctx) })
	wg.Go(func() { levels.Run(ctx) })
	tick := time.NewTicker(time.Minute)
	defer tick.Stop()
	for {
		if retry(ctx, c.s.log, "ensuring the APF configuration", func() error {
			if err := c.ensureAll(ctx); ctx.Err() == nil {
				return err
			}
			return nil // shutting down: not worth a warning
		}) {
			c.s.apfEnsured.Store(true)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

func (c *apfConfig) eachFlowSchema(ctx context.Context, st *handler.Store, fn func(*flowcontrolv1.FlowSchema) error) error {
	res, err := st.Cache.List(ctx, watchcache.ListOptions{ResourceVersion: "0"})
	if err != nil {
		return err
	}
	var errs []error
	for _, it := range res.Items {
		var fs flowcontrolv1.FlowSchema
		if err := json.Unmarshal(it.JSON(), &fs); err != nil {
			continue
		}
		errs = append(errs, fn(&fs))
	}
	return errors.Join(errs...)
}

// ensureAll writes the suggested objects, then the mandatory ones, then
// deletes the auto-updated objects no longer suggested, as upstream's
// producer does in turn.
func (c *apfConfig) ensureAll(ctx context.Context) error {
	levels, schemas := builtin.BootstrapPriorityLevels(), builtin.BootstrapFlowSchemas()
	for _, mandatory := range []bool{false, true} {
		for _, pl := range levels {
			if builtin.IsMandatoryFlowcontrolName(pl.Name) == mandatory {
				if err := c.ensure(ctx, c.plDef, &pl, pl.Name, mandatory); err != nil {
					return err
				}
			}
		}
		for _, fs := range schemas {
			if builtin.IsMandatoryFlowcontrolName(fs.Name) == mandatory {
				if err := c.ensure(ctx, c.fsDef, &fs, fs.Name, mandatory); err != nil {
					return err
				}
			}
		}
	}
	names := map[string]bool{}
	for _, fs := range schemas {
		names[fs.Name] = true
	}
	if err := c.removeUnwanted(ctx, c.fsDef, names); err != nil {
		return err
	}
	names = map[string]bool{}
	for _, pl := range levels {
		names[pl.Name] = true
	}
	return c.removeUnwanted(ctx, c.plDef, names)
}

// ensureLevel ensures the named level, if it is a bootstrap one.
func (c *apfConfig) ensureLevel(ctx context.Context, name string) error {
	for _, pl := range builtin.BootstrapPriorityLevels() {
		if pl.Name == name {
			return c.ensure(ctx, c.plDef, &pl, name, builtin.IsMandatoryFlowcontrolName(name))
		}
	}
	return nil
}

// syncFlowSchema ensures the named schema, if it is a bootstrap one,
// compiles the classifier again, and applies the schema's Dangling
// condition.
func (c *apfConfig) syncFlowSchema(ctx context.Context, name string) error {
	for _, fs := range builtin.BootstrapFlowSchemas() {
		if fs.Name == name {
			if err := c.ensure(ctx, c.fsDef, &fs, name, builtin.IsMandatoryFlowcontrolName(name)); err != nil {
				return err
			}
		}
	}
	if err := c.reclassify(ctx); err != nil {
		return err
	}
	return c.syncDangling(ctx, name)
}

// ensure creates want (a *FlowSchema or *PriorityLevelConfiguration) where
// missing, or revises the stored object: its spec back to want's when
// mandatory or auto-updated, its auto-update annotation to say which.
// Writes are recorded as the producer's updates.
func (c *apfConfig) ensure(ctx context.Context, def *registry.Definition, want any, name string, mandatory bool) error {
	st, _ := c.s.stores.Store(def.GroupResource())
	key := st.Key("", name)
	fields := c.fieldManager(def)
	wantObj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(want)
	if err != nil {
		return err
	}
	delete(metadata(wantObj), "creationTimestamp")
	kv, err := st.Storage.Get(ctx, key)
	if errors.Is(err, storage.ErrNotFound) {
		md := metadata(wantObj)
		now := metav1.NewTime(c.now().UTC().Truncate(time.Second))
		md["uid"] = string(uuid.NewUUID())
		md["creationTimestamp"] = now.UTC().Format(time.RFC3339)
		md["generation"] = int64(1)
		md["managedFields"] = []any{apfEntry(apfProducer, "Update", "", apfCreateFields(wantObj), now.Time)}
		data, err := handler.EncodeStored(wantObj)
		if err != nil {
			return err
		}
		if _, err := st.Storage.Create(ctx, key, data); err != nil && !errors.Is(err, storage.ErrExists) {
			return fmt.Errorf("creating %s %s: %w", def.Kind, name, err)
		}
		return nil
	}
	if err != nil {
		return err
	}
	live, err := handler.DecodeStored(kv.Value)
	if err != nil {
		return err
	}
	md := metadata(live)
	annotations, _ := md["annotations"].(map[string]any)
	autoUpdate := mandatory
	value, hasValue := annotations[flowcontrolv1.AutoUpdateAnnotationKey].(string)
	parsed, perr := strconv.ParseBool(value)
	if !autoUpdate {
		if hasValue && perr == nil {
			autoUpdate = parsed
		} else {
			// Unmarked, or marked unreadably: the spec is upstream's to
			// update as long as nobody changed it.
			autoUpdate = md["generation"] == int64(1)
		}
	}
	if def == c.plDef && name == "exempt" {
		// exempt's shares and lendable percent are the admin's to set.
		spec, _ := live["spec"].(map[string]any)
		if have, ok := spec["exempt"].(map[string]any); ok {
			exempt := wantObj["spec"].(map[string]any)["exempt"].(map[string]any)
			for _, k := range []string{"nominalConcurrencyShares", "lendablePercent"} {
				if v, ok := have[k]; ok {
					exempt[k] = v
				} else {
					delete(exempt, k)
				}
			}
		}
	}
	updateAnnotation := !hasValue || perr != nil || parsed != autoUpdate
	specChanged := autoUpdate && !equality.Semantic.DeepEqual(live["spec"], wantObj["spec"])
	if !updateAnnotation && !specChanged {
		return nil
	}
	next := runtime.DeepCopyJSON(live)
	if specChanged {
		next["spec"] = runtime.DeepCopyJSON(wantObj)["spec"]
		gen, _ := md["generation"].(int64)
		metadata(next)["generation"] = gen + 1
	}
	if updateAnnotation {
		a, _ := metadata(next)["annotations"].(map[string]any)
		if a == nil {
			a = map[string]any{}
			metadata(next)["annotations"] = a
		}
		a[flowcontrolv1.AutoUpdateAnnotationKey] = strconv.FormatBool(autoUpdate)
	}
	fields.Update(live, next, apfProducer)
	data, err := handler.EncodeStored(next)
	if err != nil {
		return err
	}
	if _, err := st.Storage.Update(ctx, key, data, kv.ModRevision); err != nil && !errors.Is(err, storage.ErrConflict) && !errors.Is(err, storage.ErrNotFound) {
		return fmt.Errorf("updating %s %s: %w", def.Kind, name, err)
	}
	return nil
}

// removeUnwanted deletes def's objects marked for auto-update whose name
// is not among keep.
func (c *apfConfig) removeUnwanted(ctx context.Context, def *registry.Definition, keep map[string]bool) error {
	st, _ := c.s.stores.Store(def.GroupResource())
	res, err := st.Cache.List(ctx, watchcache.ListOptions{ResourceVersion: "0"})
	if err != nil {
		return err
	}
	for _, it := range res.Items {
		if keep[it.Name] {
			continue
		}
		var meta struct {
			Metadata metav1.ObjectMeta `json:"metadata"`
		}
		if err := json.Unmarshal(it.JSON(), &meta); err != nil {
			continue
		}
		value := meta.Metadata.Annotations[flowcontrolv1.AutoUpdateAnnotationKey]
		if auto, err := strconv.ParseBool(value); err != nil || !auto || len(meta.Metadata.Finalizers) > 0 {
			continue
		}
		kv, err := st.Storage.Get(ctx, st.Key("", it.Name))
		if err != nil {
			continue
		}
		if _, _, err := st.Storage.Delete(ctx, st.Key("", it.Name), kv.ModRevision); err != nil && !errors.Is(err, storage.ErrConflict) && !errors.Is(err, storage.ErrNotFound) {
			return err
		}
	}
	return nil
}

// syncDangling applies the named schema's Dangling condition, as the
// consumer's server-side apply of its status, when its status, reason or
// message are not what they should be.
func (c *apfConfig) syncDangling(ctx context.Context, name string) error {
	var fs flowcontrolv1.FlowSchema
	o, found, err := c.s.readOwnStatus(ctx, flowSchemasGR, name, &fs)
	if err != nil || !found {
		return err
	}
	level := fs.Spec.PriorityLevelConfiguration.Name
	plStore, _ := c.s.stores.Store(priorityLevelsGR)
	_, err = plStore.Storage.Get(ctx, plStore.Key("", level))
	if err != nil && !errors.Is(err, storage.ErrNotFound) {
		return err
	}
	want := danglingCondition(level, err == nil)
	for _, have := range fs.Status.Conditions {
		if have.Type == want.Type && have.Status == want.Status && have.Reason == want.Reason && have.Message == want.Message {
			return nil
		}
	}
	now := metav1.NewTime(c.now().UTC().Truncate(time.Second))
	status := map[string]any{"conditions": []any{map[string]any{
		"type": string(want.Type), "status": string(want.Status), "lastTransitionTime": now.UTC().Format(time.RFC3339),
		"reason": want.Reason, "message": want.Message,
	}}}
	if done, err := c.setDangling(ctx, o, &fs, status, now.Time); done || err != nil {
		return err
	}
	return o.applyStatusAs(ctx, c.status, apfConsumer, status)
}

// setDangling writes status, a FlowSchema's new Dangling condition, with
// the consumer's managedFields entry written out, when nobody but the
// producer and the consumer wrote the schema and its status holds no
// other condition: what the consumer's apply would store, without its
// field manager. It reports false, writing nothing, otherwise.
func (c *apfConfig) setDangling(ctx context.Context, o ownStatus, fs *flowcontrolv1.FlowSchema, status map[string]any, now time.Time) (bool, error) {
	for _, cond := range fs.Status.Conditions {
		if cond.Type != flowcontrolv1.FlowSchemaConditionDangling {
			return false, nil
		}
	}
	var producer any
	for _, e := range fs.ManagedFields {
		switch {
		case e.Manager == apfConsumer && e.Operation == metav1.ManagedFieldsOperationApply && e.Subresource == "status":
		case e.Manager == apfProducer && e.Operation == metav1.ManagedFieldsOperationUpdate && e.Subresource == "" && producer == nil:
			producer = true
		default:
			return false, nil
		}
	}
	live, err := handler.DecodeStored(o.kv.Value)
	if err != nil {
		return false, err
	}
	md := metadata(live)
	entries := []any{apfEntry(apfConsumer, "Apply", "status", apfDanglingFields, now)}
	have, _ := md["managedFields"].([]any)
	for _, e := range have {
		if e, ok := e.(map[string]any); ok && e["manager"] == apfProducer {
			entries = append(entries, e)
		}
	}
	md["managedFields"] = entries
	live["status"] = status
	return true, o.store(ctx, live)
}

// danglingCondition is a schema's Dangling condition, found saying
// whether the level it names exists (its time aside).
func danglingCondition(level string, found bool) flowcontrolv1.FlowSchemaCondition {
	if found {
		return flowcontrolv1.FlowSchemaCondition{
			Type: flowcontrolv1.FlowSchemaConditionDangling, Status: flowcontrolv1.ConditionFalse, Reason: "Found",
			Message: fmt.Sprintf("This FlowSchema references the PriorityLevelConfiguration object named %q and it exists", level),
		}
	}
	return flowcontrolv1.FlowSchemaCondition{
		Type: flowcontrolv1.FlowSchemaConditionDangling, Status: flowcontrolv1.ConditionTrue, Reason: "NotFound",
		Message: fmt.Sprintf("This FlowSchema references the PriorityLevelConfiguration object named %q but there is no such object", level),
	}
}

// fieldManager is def's field manager for the producer's writes of the
// resource (not its status).
func (c *apfConfig) fieldManager(def *registry.Definition) *apply.Manager {
	m := &apply.Manager{
		Types:        apply.Of(def),
		GroupVersion: schema.GroupVersion{Group: def.Group, Version: "v1"},
		Kind:         def.Kind,
		Reset: map[fieldpath.APIVersion]*fieldpath.Set{
			fieldpath.APIVersion(registry.APIVersion(def.Group, "v1")): fieldpath.NewSet(fieldpath.MakePathOrDie("status")),
		},
	}
	if z, ok := def.Hooks.(registry.Zeroer); ok {
		m.Zero = z.ZeroObject()
	}
	return m
}

var nominalSeatsDesc = prometheus.NewDesc("apiserver_flowcontrol_nominal_limit_seats",
	"Nominal number of execution seats configured for each priority level", []string{"priority_level"}, nil)

// nominalSeats reports each priority level's nominal seats: its share of
// the server's seats (--max-requests-inflight), as upstream shares its
// server concurrency limit. crdserver still serves every level from one
// shared set of seats (internal/fairness); the numbers say what upstream
// would give each.
type nominalSeats struct {
	apf   *apfConfig
	seats int
}

func (n nominalSeats) Describe(ch chan<- *prometheus.Desc) { ch <- nominalSeatsDesc }

func (n nominalSeats) Collect(ch chan<- prometheus.Metric) {
	for _, l := range n.apf.current().NominalSeats(n.seats) {
		ch <- prometheus.MustNewConstMetric(nominalSeatsDesc, prometheus.GaugeValue, float64(l.Seats), l.Name)
	}
}
