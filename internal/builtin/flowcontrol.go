package builtin

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/crdserver/crdserver/internal/registry"
)

// FlowSchemas is the flowcontrol.apiserver.k8s.io/v1 flowschemas
// resource: stored with upstream's defaults and rules; the two mandatory
// schemas (exempt, catch-all) keep upstream's fixed specs. A list's Table
// is in matching order (precedence, then name), as upstream prints it.
func FlowSchemas() *registry.Definition {
	k := kindDef{
		group: flowcontrolv1.GroupName, version: "v1", resource: "flowschemas", kind: "FlowSchema",
		scope: registry.Cluster, status: true,
	}
	return k.definition(flowSchemaHooks{newKindHooks[flowcontrolv1.FlowSchema](k, flowSchemaRules{})})
}

// PriorityLevelConfigurations is the flowcontrol.apiserver.k8s.io/v1
// prioritylevelconfigurations resource, stored with upstream's defaults
// and rules; the mandatory levels (exempt, catch-all) keep their fixed
// specs, but for exempt's spec.exempt.
func PriorityLevelConfigurations() *registry.Definition {
	return define[flowcontrolv1.PriorityLevelConfiguration](kindDef{
		group: flowcontrolv1.GroupName, version: "v1", resource: "prioritylevelconfigurations", kind: "PriorityLevelConfiguration",
		scope: registry.Cluster, status: true,
	}, priorityLevelRules{})
}

// Upstream's bounds and names.
const (
	maxMatchingPrecedence = 10000
	maxQueues             = 10000000
	// maxShuffleShardingBits is the hash bits a flow's hand of queues
	// may take (upstream's shuffle sharding MaxHashBits).
	maxShuffleShardingBits    = 60
	preserveZeroSharesKey     = "flowcontrol.k8s.io/v1beta3-preserve-zero-concurrency-shares"
	flowcontrolNameExempt     = "exempt"
	flowcontrolNameCatchAll   = "catch-all"
	defaultMatchingPrecedence = 1000
)

type flowSchemaRules struct{}

func (flowSchemaRules) defaults(fs *flowcontrolv1.FlowSchema) {
	if fs.Spec.MatchingPrecedence == 0 {
		fs.Spec.MatchingPrecedence = defaultMatchingPrecedence
	}
}

var (
	flowcontrolVerbs   = []string{"create", "delete", "deletecollection", "get", "list", "patch", "proxy", "update", "watch"}
	flowDistinguishers = []string{string(flowcontrolv1.FlowDistinguisherMethodByNamespaceType), string(flowcontrolv1.FlowDistinguisherMethodByUserType)}
	flowSubjectKinds   = []string{string(flowcontrolv1.SubjectKindGroup), string(flowcontrolv1.SubjectKindServiceAccount), string(flowcontrolv1.SubjectKindUser)}
	priorityLevelTypes = []string{string(flowcontrolv1.PriorityLevelEnablementExempt), string(flowcontrolv1.PriorityLevelEnablementLimited)}
	limitResponseTypes = []string{string(flowcontrolv1.LimitResponseTypeQueue), string(flowcontrolv1.LimitResponseTypeReject)}
)

func (flowSchemaRules) validate(fs, _ *flowcontrolv1.FlowSchema) field.ErrorList {
	s, p := &fs.Spec, field.NewPath("spec")
	var errs field.ErrorList
	mp := p.Child("matchingPrecedence")
	if s.MatchingPrecedence <= 0 {
		errs = append(errs, field.Invalid(mp, s.MatchingPrecedence, "must be a positive value"))
	}
	if s.MatchingPrecedence > maxMatchingPrecedence {
		errs = append(errs, field.Invalid(mp, s.MatchingPrecedence, fmt.Sprintf("must not be greater than %v", maxMatchingPrecedence)))
	}
	if s.MatchingPrecedence == 1 && fs.Name != flowcontrolNameExempt {
		errs = append(errs, field.Invalid(mp, s.MatchingPrecedence, "only the schema named 'exempt' may have matchingPrecedence 1"))
	}
	if d := s.DistinguisherMethod; d != nil && !slices.Contains(flowDistinguishers, string(d.Type)) {
		// Upstream shows its internal struct, whose JSON has Go's names.
		errs = append(errs, field.NotSupported(p.Child("distinguisherMethod", "type"), internalJSON(d), flowDistinguishers))
	}
	pl := p.Child("priorityLevelConfiguration", "name")
	if name := s.PriorityLevelConfiguration.Name; name == "" {
		errs = append(errs, field.Required(pl, "must reference a priority level"))
	} else {
		for _, msg := range apivalidation.NameIsDNSSubdomain(name, false) {
			errs = append(errs, field.Invalid(pl, name, msg))
		}
	}
	for i := range s.Rules {
		errs = append(errs, validateFlowRule(&s.Rules[i], p.Child("rules").Index(i))...)
	}
	if want, ok := mandatoryFlowSchemas()[fs.Name]; ok && !equality.Semantic.DeepEqual(fs.Spec, want.Spec) {
		errs = append(errs, field.Invalid(p, internalJSON(fs.Spec), fmt.Sprintf("spec of '%s' must equal the fixed value", fs.Name)))
	}
	return append(errs, flowSchemaRules{}.validateStatus(fs)...)
}

func validateFlowRule(r *flowcontrolv1.PolicyRulesWithSubjects, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(r.Subjects) == 0 {
		errs = append(errs, field.Required(p.Child("subjects"), "subjects must contain at least one value"))
	}
	for i := range r.Subjects {
		errs = append(errs, validateFlowSubject(&r.Subjects[i], p.Child("subjects").Index(i))...)
	}
	if len(r.ResourceRules) == 0 && len(r.NonResourceRules) == 0 {
		errs = append(errs, field.Required(p, "at least one of resourceRules and nonResourceRules has to be non-empty"))
	}
	for i := range r.ResourceRules {
		errs = append(errs, validateFlowResourceRule(&r.ResourceRules[i], p.Child("resourceRules").Index(i))...)
	}
	for i := range r.NonResourceRules {
		errs = append(errs, validateFlowNonResourceRule(&r.NonResourceRules[i], p.Child("nonResourceRules").Index(i))...)
	}
	return errs
}

// validateFlowSubject checks that a subject has the member its kind names
// and no other.
func validateFlowSubject(s *flowcontrolv1.Subject, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	others := func(kind flowcontrolv1.SubjectKind) {
		if kind != flowcontrolv1.SubjectKindServiceAccount && s.ServiceAccount != nil {
			errs = append(errs, field.Forbidden(p.Child("serviceAccount"), "serviceAccount is forbidden when subject kind is not 'ServiceAccount'"))
		}
		if kind != flowcontrolv1.SubjectKindUser && s.User != nil {
			errs = append(errs, field.Forbidden(p.Child("user"), "user is forbidden when subject kind is not 'User'"))
		}
		if kind != flowcontrolv1.SubjectKindGroup && s.Group != nil {
			errs = append(errs, field.Forbidden(p.Child("group"), "group is forbidden when subject kind is not 'Group'"))
		}
	}
	switch s.Kind {
	case flowcontrolv1.SubjectKindServiceAccount:
		sa, sp := s.ServiceAccount, p.Child("serviceAccount")
		if sa == nil {
			errs = append(errs, field.Required(sp, "serviceAccount is required when subject kind is 'ServiceAccount'"))
			break
		}
		if sa.Name == "" {
			errs = append(errs, field.Required(sp.Child("name"), ""))
		} else if sa.Name != flowcontrolv1.NameAll {
			for _, msg := range apivalidation.ValidateServiceAccountName(sa.Name, false) {
				errs = append(errs, field.Invalid(sp.Child("name"), sa.Name, msg))
			}
		}
		if sa.Namespace == "" {
			errs = append(errs, field.Required(sp.Child("namespace"), "must specify namespace for service account"))
		} else {
			for _, msg := range apivalidation.ValidateNamespaceName(sa.Namespace, false) {
				errs = append(errs, field.Invalid(sp.Child("namespace"), sa.Namespace, msg))
			}
		}
	case flowcontrolv1.SubjectKindUser:
		if s.User == nil {
			errs = append(errs, field.Required(p.Child("user"), "user is required when subject kind is 'User'"))
		} else if s.User.Name == "" {
			errs = append(errs, field.Required(p.Child("user", "name"), ""))
		}
	case flowcontrolv1.SubjectKindGroup:
		if s.Group == nil {
			errs = append(errs, field.Required(p.Child("group"), "group is required when subject kind is 'Group'"))
		} else if s.Group.Name == "" {
			errs = append(errs, field.Required(p.Child("group", "name"), ""))
		}
	default:
		return field.ErrorList{field.NotSupported(p.Child("kind"), s.Kind, flowSubjectKinds)}
	}
	others(s.Kind)
	return errs
}

func validateFlowVerbs(verbs []string, p *field.Path) field.ErrorList {
	switch {
	case len(verbs) == 0:
		return field.ErrorList{field.Required(p, "verbs must contain at least one value")}
	case slices.Contains(verbs, flowcontrolv1.VerbAll):
		if len(verbs) > 1 {
			return field.ErrorList{field.Invalid(p, verbs, "if '*' is present, must not specify other verbs")}
		}
	default:
		for _, v := range verbs {
			if !slices.Contains(flowcontrolVerbs, v) {
				return field.ErrorList{field.NotSupported(p, verbs, flowcontrolVerbs)}
			}
		}
	}
	return nil
}

func validateFlowResourceRule(r *flowcontrolv1.ResourcePolicyRule, p *field.Path) field.ErrorList {
	errs := validateFlowVerbs(r.Verbs, p.Child("verbs"))
	if len(r.APIGroups) == 0 {
		errs = append(errs, field.Required(p.Child("apiGroups"), "resource rules must supply at least one api group"))
	} else if len(r.APIGroups) > 1 && slices.Contains(r.APIGroups, flowcontrolv1.APIGroupAll) {
		errs = append(errs, field.Invalid(p.Child("apiGroups"), r.APIGroups, "if '*' is present, must not specify other api groups"))
	}
	if len(r.Resources) == 0 {
		errs = append(errs, field.Required(p.Child("resources"), "resource rules must supply at least one resource"))
	} else if len(r.Resources) > 1 && slices.Contains(r.Resources, flowcontrolv1.ResourceAll) {
		errs = append(errs, field.Invalid(p.Child("resources"), r.Resources, "if '*' is present, must not specify other resources"))
	}
	np := p.Child("namespaces")
	switch {
	case len(r.Namespaces) == 0 && !r.ClusterScope:
		errs = append(errs, field.Required(np, "resource rules that are not cluster scoped must supply at least one namespace"))
	case slices.Contains(r.Namespaces, flowcontrolv1.NamespaceEvery):
		if len(r.Namespaces) > 1 {
			errs = append(errs, field.Invalid(np, r.Namespaces, "if '*' is present, must not specify other namespaces"))
		}
	default:
		for i, ns := range r.Namespaces {
			for _, msg := range apivalidation.ValidateNamespaceName(ns, false) {
				errs = append(errs, field.Invalid(np.Index(i), ns, "each member of this list must be '*' or a DNS-1123 label; "+msg))
			}
		}
	}
	return errs
}

func validateFlowNonResourceRule(r *flowcontrolv1.NonResourcePolicyRule, p *field.Path) field.ErrorList {
	errs := validateFlowVerbs(r.Verbs, p.Child("verbs"))
	up := p.Child("nonResourceURLs")
	switch {
	case len(r.NonResourceURLs) == 0:
		errs = append(errs, field.Required(up, "nonResourceURLs must contain at least one value"))
	case slices.Contains(r.NonResourceURLs, flowcontrolv1.NonResourceAll):
		if len(r.NonResourceURLs) > 1 {
			errs = append(errs, field.Invalid(up, r.NonResourceURLs, "if '*' is present, must not specify other non-resource URLs"))
		}
	default:
		for i, u := range r.NonResourceURLs {
			if msg := nonResourceURLError(u); msg != "" {
				errs = append(errs, field.Invalid(up.Index(i), u, msg))
			}
		}
	}
	return errs
}

// nonResourceURLError is why u is no non-resource URL a rule may name
// (an absolute path, with at most a trailing "/*"), or "".
func nonResourceURLError(u string) string {
	switch {
	case u == "":
		return "must not be empty"
	case u == "/":
		return ""
	case !strings.HasPrefix(u, "/"):
		return "must start with slash"
	case strings.Contains(u, " "):
		return "must not contain white-space"
	case strings.Contains(u, "//"):
		return "must not contain double slash"
	}
	if n := strings.Count(u, "*"); n > 1 || n == 1 && !strings.HasSuffix(u, "/*") {
		return "wildcard can only do suffix matching"
	}
	return ""
}

// validateStatus checks that no two conditions share a type and that each
// has one.
func (flowSchemaRules) validateStatus(fs *flowcontrolv1.FlowSchema) field.ErrorList {
	types := make([]string, len(fs.Status.Conditions))
	for i, c := range fs.Status.Conditions {
		types[i] = string(c.Type)
	}
	return validateConditionTypes(types, field.NewPath("status", "conditions"))
}

func validateConditionTypes(types []string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, t := range types {
		if slices.Contains(types[:i], t) {
			errs = append(errs, field.Duplicate(p.Index(i).Child("type"), t))
		}
		if t == "" {
			errs = append(errs, field.Required(p.Index(i).Child("type"), ""))
		}
	}
	return errs
}

func (flowSchemaRules) columns() []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{
		nameColumn,
		{Name: "PriorityLevel", Type: "string", Description: flowcontrolv1.PriorityLevelConfigurationReference{}.SwaggerDoc()["name"]},
		{Name: "MatchingPrecedence", Type: "string", Description: flowcontrolv1.FlowSchemaSpec{}.SwaggerDoc()["matchingPrecedence"]},
		{Name: "DistinguisherMethod", Type: "string", Description: flowcontrolv1.FlowSchemaSpec{}.SwaggerDoc()["distinguisherMethod"]},
		ageColumn,
		{Name: "MissingPL", Type: "string", Description: "references a broken or non-existent PriorityLevelConfiguration"},
	}
}

func (flowSchemaRules) cells(fs *flowcontrolv1.FlowSchema) []any {
	method := "<none>"
	if d := fs.Spec.DistinguisherMethod; d != nil {
		method = string(d.Type)
	}
	missing := "?"
	for _, c := range fs.Status.Conditions {
		if c.Type == flowcontrolv1.FlowSchemaConditionDangling {
			missing = string(c.Status)
			break
		}
	}
	return []any{fs.Name, fs.Spec.PriorityLevelConfiguration.Name, int64(fs.Spec.MatchingPrecedence), method, age(&fs.ObjectMeta), missing}
}

// flowSchemaHooks order a list's Table rows as the schemas are matched.
type flowSchemaHooks struct {
	kindHooks[flowcontrolv1.FlowSchema, flowSchemaRules]
}

var _ registry.TableListSorter = flowSchemaHooks{}

func (flowSchemaHooks) SortTableList(objs []map[string]any) {
	precedence := func(obj map[string]any) int64 {
		spec, _ := obj["spec"].(map[string]any)
		switch n := spec["matchingPrecedence"].(type) {
		case int64:
			return n
		case float64:
			return int64(n)
		}
		return 0
	}
	slices.SortStableFunc(objs, func(a, b map[string]any) int {
		return cmp.Or(cmp.Compare(precedence(a), precedence(b)), strings.Compare(objectName(a), objectName(b)))
	})
}

type priorityLevelRules struct{}

func (priorityLevelRules) defaults(pl *flowcontrolv1.PriorityLevelConfiguration) {
	if e := pl.Spec.Exempt; e != nil {
		e.NominalConcurrencyShares = cmp.Or(e.NominalConcurrencyShares, ptr.To[int32](0))
		e.LendablePercent = cmp.Or(e.LendablePercent, ptr.To[int32](0))
	}
	if l := pl.Spec.Limited; l != nil {
		l.NominalConcurrencyShares = cmp.Or(l.NominalConcurrencyShares, ptr.To[int32](30))
		l.LendablePercent = cmp.Or(l.LendablePercent, ptr.To[int32](0))
		if q := l.LimitResponse.Queuing; q != nil {
			q.HandSize = cmp.Or(q.HandSize, 8)
			q.Queues = cmp.Or(q.Queues, 64)
			q.QueueLengthLimit = cmp.Or(q.QueueLengthLimit, 50)
		}
	}
}

func (priorityLevelRules) validate(pl, was *flowcontrolv1.PriorityLevelConfiguration) field.ErrorList {
	var errs field.ErrorList
	if _, ok := pl.Annotations[preserveZeroSharesKey]; ok {
		errs = append(errs, field.Forbidden(field.NewPath("metadata", "annotations"), fmt.Sprintf("annotation '%s' is forbidden", preserveZeroSharesKey)))
	}
	s, p := &pl.Spec, field.NewPath("spec")
	if (pl.Name == flowcontrolNameExempt) != (s.Type == flowcontrolv1.PriorityLevelEnablementExempt) {
		errs = append(errs, field.Invalid(p.Child("type"), s.Type, "must be 'Exempt' if and only if `name` is 'exempt'"))
	}
	switch s.Type {
	case flowcontrolv1.PriorityLevelEnablementExempt:
		if e := s.Exempt; e != nil {
			ep := p.Child("exempt")
			if n := e.NominalConcurrencyShares; n != nil && *n < 0 {
				errs = append(errs, field.Invalid(ep.Child("nominalConcurrencyShares"), *n, "must be a non-negative integer"))
			}
			errs = append(errs, validateLendablePercent(e.LendablePercent, ep)...)
		}
	case flowcontrolv1.PriorityLevelEnablementLimited:
		if s.Limited != nil {
			errs = append(errs, validateLimited(s.Limited, p.Child("limited"))...)
		}
	case "":
	default:
		errs = append(errs, field.NotSupported(p.Child("type"), s.Type, priorityLevelTypes))
	}
	errs = append(errs, validateMandatoryLevel(pl, p)...)
	errs = append(errs, priorityLevelRules{}.validateStatus(pl)...)
	if was == nil || !equality.Semantic.DeepEqual(pl.Spec, was.Spec) {
		errs = append(errs, declaredPriorityLevelRules(s, p)...)
	}
	return errs
}

// declaredPriorityLevelRules are the checks upstream declares on the v1
// types (which members the type and limit response types call for) and
// reports after its other checks, without details. An update that keeps
// the spec is not checked again.
func declaredPriorityLevelRules(s *flowcontrolv1.PriorityLevelConfigurationSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if s.Exempt != nil && s.Type != flowcontrolv1.PriorityLevelEnablementExempt {
		errs = append(errs, field.Forbidden(p.Child("exempt"), ""))
	}
	switch {
	case s.Limited != nil && s.Type != flowcontrolv1.PriorityLevelEnablementLimited:
		errs = append(errs, field.Forbidden(p.Child("limited"), ""))
	case s.Limited == nil && s.Type == flowcontrolv1.PriorityLevelEnablementLimited:
		errs = append(errs, field.Required(p.Child("limited"), ""))
	}
	if s.Type == "" {
		errs = append(errs, field.Required(p.Child("type"), ""))
	}
	if s.Limited == nil {
		return errs
	}
	r, rp := s.Limited.LimitResponse, p.Child("limited", "limitResponse")
	switch {
	case r.Queuing != nil && r.Type != flowcontrolv1.LimitResponseTypeQueue:
		errs = append(errs, field.Forbidden(rp.Child("queuing"), ""))
	case r.Queuing == nil && r.Type == flowcontrolv1.LimitResponseTypeQueue:
		errs = append(errs, field.Required(rp.Child("queuing"), ""))
	}
	if r.Type == "" {
		errs = append(errs, field.Required(rp.Child("type"), ""))
	}
	return errs
}

func validateLendablePercent(v *int32, p *field.Path) field.ErrorList {
	if v != nil && (*v < 0 || *v > 100) {
		return field.ErrorList{field.Invalid(p.Child("lendablePercent"), *v, "must be between 0 and 100, inclusive")}
	}
	return nil
}

func validateLimited(l *flowcontrolv1.LimitedPriorityLevelConfiguration, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if n := ptr.Deref(l.NominalConcurrencyShares, 0); n < 0 {
		errs = append(errs, field.Invalid(p.Child("nominalConcurrencyShares"), n, "must be a non-negative integer"))
	}
	r, rp := l.LimitResponse, p.Child("limitResponse")
	switch r.Type {
	case flowcontrolv1.LimitResponseTypeReject, "":
	case flowcontrolv1.LimitResponseTypeQueue:
		if r.Queuing != nil {
			errs = append(errs, validateQueuing(r.Queuing, rp.Child("queuing"))...)
		}
	default:
		errs = append(errs, field.NotSupported(rp.Child("type"), r.Type, limitResponseTypes))
	}
	errs = append(errs, validateLendablePercent(l.LendablePercent, p)...)
	if b := l.BorrowingLimitPercent; b != nil && *b < 0 {
		errs = append(errs, field.Invalid(p.Child("borrowingLimitPercent"), *b, "if specified, must be a non-negative integer"))
	}
	return errs
}

// validateQueuing checks the queues' sizes, and that a flow's hand of
// queues can be dealt from the hash bits shuffle sharding has.
func validateQueuing(q *flowcontrolv1.QueuingConfiguration, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if q.QueueLengthLimit <= 0 {
		errs = append(errs, field.Invalid(p.Child("queueLengthLimit"), q.QueueLengthLimit, "must be positive"))
	}
	if q.Queues <= 0 {
		errs = append(errs, field.Invalid(p.Child("queues"), q.Queues, "must be positive"))
	} else if q.Queues > maxQueues {
		errs = append(errs, field.Invalid(p.Child("queues"), q.Queues, fmt.Sprintf("must not be greater than %d", maxQueues)))
	}
	hp := p.Child("handSize")
	switch {
	case q.HandSize <= 0:
		errs = append(errs, field.Invalid(hp, q.HandSize, "must be positive"))
	case q.HandSize > q.Queues:
		errs = append(errs, field.Invalid(hp, q.HandSize, fmt.Sprintf("should not be greater than queues (%d)", q.Queues)))
	case shuffleShardingBits(q.Queues, q.HandSize) > maxShuffleShardingBits:
		errs = append(errs, field.Invalid(hp, q.HandSize,
			fmt.Sprintf("required entropy bits of deckSize %d and handSize %d should not be greater than %d", q.Queues, q.HandSize, maxShuffleShardingBits)))
	}
	return errs
}

// shuffleShardingBits are the hash bits dealing hand cards of deck takes.
func shuffleShardingBits(deck, hand int32) int {
	return int(math.Ceil(math.Log2(float64(deck)) * float64(hand)))
}

// validateMandatoryLevel keeps a mandatory level's spec fixed; exempt's
// spec.exempt (its shares and lendable percent) may be changed.
func validateMandatoryLevel(pl *flowcontrolv1.PriorityLevelConfiguration, p *field.Path) field.ErrorList {
	want, ok := mandatoryPriorityLevels()[pl.Name]
	if !ok {
		return nil
	}
	have, msg := pl.Spec, fmt.Sprintf("spec of '%s' must equal the fixed value", pl.Name)
	if pl.Name == flowcontrolNameExempt {
		have.Exempt = want.Spec.Exempt
		msg = fmt.Sprintf("spec of '%s' except the 'spec.exempt' field must equal the fixed value", pl.Name)
	}
	if equality.Semantic.DeepEqual(have, want.Spec) {
		return nil
	}
	return field.ErrorList{field.Invalid(p, internalJSON(pl.Spec), msg)}
}

func (priorityLevelRules) validateStatus(pl *flowcontrolv1.PriorityLevelConfiguration) field.ErrorList {
	types := make([]string, len(pl.Status.Conditions))
	for i, c := range pl.Status.Conditions {
		types[i] = string(c.Type)
	}
	return validateConditionTypes(types, field.NewPath("status", "conditions"))
}

func (priorityLevelRules) columns() []metav1.TableColumnDefinition {
	queuing := flowcontrolv1.QueuingConfiguration{}.SwaggerDoc()
	return []metav1.TableColumnDefinition{
		nameColumn,
		{Name: "Type", Type: "string", Description: flowcontrolv1.PriorityLevelConfigurationSpec{}.SwaggerDoc()["type"]},
		{Name: "NominalConcurrencyShares", Type: "string", Description: flowcontrolv1.LimitedPriorityLevelConfiguration{}.SwaggerDoc()["nominalConcurrencyShares"]},
		{Name: "Queues", Type: "string", Description: queuing["queues"]},
		{Name: "HandSize", Type: "string", Description: queuing["handSize"]},
		{Name: "QueueLengthLimit", Type: "string", Description: queuing["queueLengthLimit"]},
		ageColumn,
	}
}

func (priorityLevelRules) cells(pl *flowcontrolv1.PriorityLevelConfiguration) []any {
	shares, queues, hand, length := any("<none>"), any("<none>"), any("<none>"), any("<none>")
	if l := pl.Spec.Limited; l != nil {
		shares = int64(ptr.Deref(l.NominalConcurrencyShares, 0))
		if q := l.LimitResponse.Queuing; q != nil {
			queues, hand, length = int64(q.Queues), int64(q.HandSize), int64(q.QueueLengthLimit)
		}
	}
	return []any{pl.Name, string(pl.Spec.Type), shares, queues, hand, length, age(&pl.ObjectMeta)}
}

// internalJSON is v as upstream's validation shows its internal
// flowcontrol types (goNamesJSON), which a Status shows as they are.
func internalJSON(v any) json.RawMessage { return goNamesJSON(reflect.ValueOf(v)) }
