package builtin

import (
	"sync"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// The configuration upstream's kube-apiserver keeps: mandatory objects,
// restored when deleted and whose specs may not change (validate checks
// them), and suggested ones, created when missing and kept up to date
// while they carry the auto-update annotation. Their specs are as
// upstream's defaults leave them.

// flowSchemaSpec is one bootstrap FlowSchema in short: every one has a
// single rule.
type flowSchemaSpec struct {
	name, level string
	precedence  int32
	method      flowcontrolv1.FlowDistinguisherMethodType
	subjects    []flowcontrolv1.Subject
	resources   []flowcontrolv1.ResourcePolicyRule
	nonResource []flowcontrolv1.NonResourcePolicyRule
}

// priorityLevelSpec is one bootstrap Limited level in short (exempt
// aside); queues 0 means it rejects rather than queues.
type priorityLevelSpec struct {
	name                     string
	shares, lendable         int32
	queues, hand, queueLimit int32
}

func groupSubjects(names ...string) []flowcontrolv1.Subject {
	s := make([]flowcontrolv1.Subject, len(names))
	for i, n := range names {
		s[i] = flowcontrolv1.Subject{Kind: flowcontrolv1.SubjectKindGroup, Group: &flowcontrolv1.GroupSubject{Name: n}}
	}
	return s
}

func userSubjects(names ...string) []flowcontrolv1.Subject {
	s := make([]flowcontrolv1.Subject, len(names))
	for i, n := range names {
		s[i] = flowcontrolv1.Subject{Kind: flowcontrolv1.SubjectKindUser, User: &flowcontrolv1.UserSubject{Name: n}}
	}
	return s
}

// allKubeSystemServiceAccounts is every service account of kube-system.
var allKubeSystemServiceAccounts = flowcontrolv1.Subject{
	Kind:           flowcontrolv1.SubjectKindServiceAccount,
	ServiceAccount: &flowcontrolv1.ServiceAccountSubject{Namespace: metav1.NamespaceSystem, Name: flowcontrolv1.NameAll},
}

var (
	everyResource = []flowcontrolv1.ResourcePolicyRule{{
		Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}, ClusterScope: true, Namespaces: []string{"*"},
	}}
	everyNonResource = []flowcontrolv1.NonResourcePolicyRule{{Verbs: []string{"*"}, NonResourceURLs: []string{"*"}}}
	anyone           = []string{"system:unauthenticated", "system:authenticated"}
)

func leasesRule(verbs ...string) flowcontrolv1.ResourcePolicyRule {
	return flowcontrolv1.ResourcePolicyRule{Verbs: verbs, APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Namespaces: []string{"*"}}
}

// bootstrapFlowSchemaSpecs are upstream's mandatory schemas, then its
// suggested ones, in upstream's order.
var bootstrapFlowSchemaSpecs = []flowSchemaSpec{
	{name: "exempt", level: "exempt", precedence: 1, subjects: groupSubjects("system:masters"), resources: everyResource, nonResource: everyNonResource},
	{name: "catch-all", level: "catch-all", precedence: 10000, method: flowcontrolv1.FlowDistinguisherMethodByUserType,
		subjects: groupSubjects(anyone...), resources: everyResource, nonResource: everyNonResource},

	{name: "system-nodes", level: "system", precedence: 500, method: flowcontrolv1.FlowDistinguisherMethodByUserType,
		subjects: groupSubjects("system:nodes"), resources: everyResource, nonResource: everyNonResource},
	{name: "system-node-high", level: "node-high", precedence: 400, method: flowcontrolv1.FlowDistinguisherMethodByUserType,
		subjects: groupSubjects("system:nodes"), resources: []flowcontrolv1.ResourcePolicyRule{
			{Verbs: []string{"*"}, APIGroups: []string{""}, Resources: []string{"nodes", "nodes/status"}, ClusterScope: true, Namespaces: []string{"*"}},
			leasesRule("*"),
		}},
	{name: "probes", level: "exempt", precedence: 2, subjects: groupSubjects(anyone...),
		nonResource: []flowcontrolv1.NonResourcePolicyRule{{Verbs: []string{"get"}, NonResourceURLs: []string{"/healthz", "/readyz", "/livez"}}}},
	{name: "system-leader-election", level: "leader-election", precedence: 100, method: flowcontrolv1.FlowDistinguisherMethodByUserType,
		subjects:  append(userSubjects("system:kube-controller-manager", "system:kube-scheduler"), allKubeSystemServiceAccounts),
		resources: []flowcontrolv1.ResourcePolicyRule{leasesRule("get", "create", "update")}},
	{name: "kube-controller-manager", level: "workload-high", precedence: 800, method: flowcontrolv1.FlowDistinguisherMethodByNamespaceType,
		subjects: userSubjects("system:kube-controller-manager"), resources: everyResource, nonResource: everyNonResource},
	{name: "kube-scheduler", level: "workload-high", precedence: 800, method: flowcontrolv1.FlowDistinguisherMethodByNamespaceType,
		subjects: userSubjects("system:kube-scheduler"), resources: everyResource, nonResource: everyNonResource},
	{name: "kube-system-service-accounts", level: "workload-high", precedence: 900, method: flowcontrolv1.FlowDistinguisherMethodByNamespaceType,
		subjects: []flowcontrolv1.Subject{allKubeSystemServiceAccounts}, resources: everyResource, nonResource: everyNonResource},
	{name: "service-accounts", level: "workload-low", precedence: 9000, method: flowcontrolv1.FlowDistinguisherMethodByUserType,
		subjects: groupSubjects("system:serviceaccounts"), resources: everyResource, nonResource: everyNonResource},
	{name: "global-default", level: "global-default", precedence: 9900, method: flowcontrolv1.FlowDistinguisherMethodByUserType,
		subjects: groupSubjects(anyone...), resources: everyResource, nonResource: everyNonResource},
}

// bootstrapPriorityLevelSpecs are upstream's Limited levels: catch-all
// (mandatory), then the suggested ones.
var bootstrapPriorityLevelSpecs = []priorityLevelSpec{
	{name: "catch-all", shares: 5},
	{name: "system", shares: 30, lendable: 33, queues: 64, hand: 6, queueLimit: 50},
	{name: "node-high", shares: 40, lendable: 25, queues: 64, hand: 6, queueLimit: 50},
	{name: "leader-election", shares: 10, queues: 16, hand: 4, queueLimit: 50},
	{name: "workload-high", shares: 40, lendable: 50, queues: 128, hand: 6, queueLimit: 50},
	{name: "workload-low", shares: 100, lendable: 90, queues: 128, hand: 6, queueLimit: 50},
	{name: "global-default", shares: 20, lendable: 50, queues: 128, hand: 6, queueLimit: 50},
}

func bootstrapMeta(name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Annotations: map[string]string{flowcontrolv1.AutoUpdateAnnotationKey: "true"}}
}

func (s flowSchemaSpec) object() flowcontrolv1.FlowSchema {
	fs := flowcontrolv1.FlowSchema{
		TypeMeta:   metav1.TypeMeta{APIVersion: flowcontrolv1.SchemeGroupVersion.String(), Kind: "FlowSchema"},
		ObjectMeta: bootstrapMeta(s.name),
		Spec: flowcontrolv1.FlowSchemaSpec{
			PriorityLevelConfiguration: flowcontrolv1.PriorityLevelConfigurationReference{Name: s.level},
			MatchingPrecedence:         s.precedence,
			Rules: []flowcontrolv1.PolicyRulesWithSubjects{{
				Subjects: s.subjects, ResourceRules: s.resources, NonResourceRules: s.nonResource,
			}},
		},
	}
	if s.method != "" {
		fs.Spec.DistinguisherMethod = &flowcontrolv1.FlowDistinguisherMethod{Type: s.method}
	}
	return fs
}

func (s priorityLevelSpec) object() flowcontrolv1.PriorityLevelConfiguration {
	l := &flowcontrolv1.LimitedPriorityLevelConfiguration{
		NominalConcurrencyShares: ptr.To(s.shares),
		LendablePercent:          ptr.To(s.lendable),
		LimitResponse:            flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeReject},
	}
	if s.queues > 0 {
		l.LimitResponse = flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeQueue, Queuing: &flowcontrolv1.QueuingConfiguration{
			Queues: s.queues, HandSize: s.hand, QueueLengthLimit: s.queueLimit,
		}}
	}
	return flowcontrolv1.PriorityLevelConfiguration{
		TypeMeta:   metav1.TypeMeta{APIVersion: flowcontrolv1.SchemeGroupVersion.String(), Kind: "PriorityLevelConfiguration"},
		ObjectMeta: bootstrapMeta(s.name),
		Spec:       flowcontrolv1.PriorityLevelConfigurationSpec{Type: flowcontrolv1.PriorityLevelEnablementLimited, Limited: l},
	}
}

// exemptPriorityLevel is upstream's mandatory exempt level.
func exemptPriorityLevel() flowcontrolv1.PriorityLevelConfiguration {
	return flowcontrolv1.PriorityLevelConfiguration{
		TypeMeta:   metav1.TypeMeta{APIVersion: flowcontrolv1.SchemeGroupVersion.String(), Kind: "PriorityLevelConfiguration"},
		ObjectMeta: bootstrapMeta(flowcontrolNameExempt),
		Spec: flowcontrolv1.PriorityLevelConfigurationSpec{
			Type:   flowcontrolv1.PriorityLevelEnablementExempt,
			Exempt: &flowcontrolv1.ExemptPriorityLevelConfiguration{NominalConcurrencyShares: ptr.To[int32](0), LendablePercent: ptr.To[int32](0)},
		},
	}
}

// BootstrapFlowSchemas are upstream's mandatory FlowSchemas (exempt,
// catch-all), then its suggested ones, as kube-apiserver writes them.
func BootstrapFlowSchemas() []flowcontrolv1.FlowSchema {
	out := make([]flowcontrolv1.FlowSchema, len(bootstrapFlowSchemaSpecs))
	for i, s := range bootstrapFlowSchemaSpecs {
		out[i] = s.object()
	}
	return out
}

// BootstrapPriorityLevels are upstream's mandatory
// PriorityLevelConfigurations (exempt, catch-all), then its suggested
// ones.
func BootstrapPriorityLevels() []flowcontrolv1.PriorityLevelConfiguration {
	out := []flowcontrolv1.PriorityLevelConfiguration{exemptPriorityLevel()}
	for _, s := range bootstrapPriorityLevelSpecs {
		out = append(out, s.object())
	}
	return out
}

// IsMandatoryFlowcontrolName reports whether name is that of a mandatory
// FlowSchema or PriorityLevelConfiguration (both kinds have the same two).
func IsMandatoryFlowcontrolName(name string) bool {
	return name == flowcontrolNameExempt || name == flowcontrolNameCatchAll
}

var (
	mandatoryFlowSchemas = sync.OnceValue(func() map[string]flowcontrolv1.FlowSchema {
		m := map[string]flowcontrolv1.FlowSchema{}
		for _, fs := range BootstrapFlowSchemas() {
			if IsMandatoryFlowcontrolName(fs.Name) {
				m[fs.Name] = fs
			}
		}
		return m
	})
	mandatoryPriorityLevels = sync.OnceValue(func() map[string]flowcontrolv1.PriorityLevelConfiguration {
		m := map[string]flowcontrolv1.PriorityLevelConfiguration{}
		for _, pl := range BootstrapPriorityLevels() {
			if IsMandatoryFlowcontrolName(pl.Name) {
				m[pl.Name] = pl
			}
		}
		return m
	})
)
