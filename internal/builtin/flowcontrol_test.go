package builtin

import (
	"reflect"
	"testing"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/crdserver/crdserver/internal/registry"
)

// FlowSchemas and PriorityLevelConfigurations get upstream's errors in its
// order: the handwritten checks' first, then those its declarative rules
// report (without details).
func TestFlowcontrolValidation(t *testing.T) {
	const (
		fs   = `{kind: FlowSchema, metadata: {name: f}, spec: `
		pl   = `{kind: PriorityLevelConfiguration, metadata: {name: p}, spec: `
		user = `{kind: User, user: {name: u}}`
	)
	for _, tc := range []struct {
		line string
		def  func() *registry.Definition
		old  string // an update's stored object
		obj  string
		want []string
	}{
		{line: line(), def: FlowSchemas, obj: fs + `{priorityLevelConfiguration: {name: p}, distinguisherMethod: {type: ByUser}, rules: [{subjects: [` + user + `,
			{kind: ServiceAccount, serviceAccount: {namespace: ns, name: "*"}}], resourceRules: [{verbs: [get], apiGroups: [""], resources: [pods], namespaces: ["*"]}],
			nonResourceRules: [{verbs: ["*"], nonResourceURLs: [/healthz, "/apis/*", /]}]}]}}`},
		{line: line(), def: FlowSchemas, obj: fs + `{matchingPrecedence: 1, priorityLevelConfiguration: {name: ""}, distinguisherMethod: {type: ByFoo}}}`,
			want: []string{
				"spec.matchingPrecedence: Invalid value: 1: only the schema named 'exempt' may have matchingPrecedence 1",
				`spec.distinguisherMethod.type: Unsupported value: {"Type":"ByFoo"}: supported values: "ByNamespace", "ByUser"`,
				"spec.priorityLevelConfiguration.name: Required value: must reference a priority level",
			}},
		{line: line(), def: FlowSchemas, obj: fs + `{matchingPrecedence: 10001, priorityLevelConfiguration: {name: p}, rules: [{}, {subjects: [{kind: Bogus}, {kind: User, group: {name: g}}, {kind: ServiceAccount, serviceAccount: {name: ""}}],
			resourceRules: [{verbs: ["*", get], apiGroups: [], resources: ["*", pods]}], nonResourceRules: [{verbs: [frob], nonResourceURLs: [x, "/a*", "/a//b"]}]}]}}`,
			want: []string{
				"spec.matchingPrecedence: Invalid value: 10001: must not be greater than 10000",
				"spec.rules[0].subjects: Required value: subjects must contain at least one value",
				"spec.rules[0]: Required value: at least one of resourceRules and nonResourceRules has to be non-empty",
				`spec.rules[1].subjects[0].kind: Unsupported value: "Bogus": supported values: "Group", "ServiceAccount", "User"`,
				"spec.rules[1].subjects[1].user: Required value: user is required when subject kind is 'User'",
				"spec.rules[1].subjects[1].group: Forbidden: group is forbidden when subject kind is not 'Group'",
				"spec.rules[1].subjects[2].serviceAccount.name: Required value",
				"spec.rules[1].subjects[2].serviceAccount.namespace: Required value: must specify namespace for service account",
				`spec.rules[1].resourceRules[0].verbs: Invalid value: ["*","get"]: if '*' is present, must not specify other verbs`,
				"spec.rules[1].resourceRules[0].apiGroups: Required value: resource rules must supply at least one api group",
				`spec.rules[1].resourceRules[0].resources: Invalid value: ["*","pods"]: if '*' is present, must not specify other resources`,
				"spec.rules[1].resourceRules[0].namespaces: Required value: resource rules that are not cluster scoped must supply at least one namespace",
				`spec.rules[1].nonResourceRules[0].verbs: Unsupported value: ["frob"]: supported values: "create", "delete", "deletecollection", "get", "list", "patch", "proxy", "update", "watch"`,
				`spec.rules[1].nonResourceRules[0].nonResourceURLs[0]: Invalid value: "x": must start with slash`,
				`spec.rules[1].nonResourceRules[0].nonResourceURLs[1]: Invalid value: "/a*": wildcard can only do suffix matching`,
				`spec.rules[1].nonResourceRules[0].nonResourceURLs[2]: Invalid value: "/a//b": must not contain double slash`,
			}},
		{line: line(), def: FlowSchemas, obj: `{kind: FlowSchema, metadata: {name: exempt}, spec: {matchingPrecedence: 1, priorityLevelConfiguration: {name: exempt}}}`,
			want: []string{`spec: Invalid value: {"PriorityLevelConfiguration":{"Name":"exempt"},"MatchingPrecedence":1,"DistinguisherMethod":null,"Rules":null}: spec of 'exempt' must equal the fixed value`}},
		{line: line(), def: PriorityLevelConfigurations, obj: pl + `{type: Limited, limited: {limitResponse: {type: Queue, queuing: {}}}}}`},
		{line: line(), def: PriorityLevelConfigurations, obj: pl + `{type: Exempt, limited: {limitResponse: {type: Reject}}, exempt: {nominalConcurrencyShares: -1}}}`,
			want: []string{
				"spec.type: Invalid value: \"Exempt\": must be 'Exempt' if and only if `name` is 'exempt'",
				"spec.exempt.nominalConcurrencyShares: Invalid value: -1: must be a non-negative integer",
				"spec.limited: Forbidden",
			}},
		{line: line(), def: PriorityLevelConfigurations, obj: pl + `{type: Limited, limited: {nominalConcurrencyShares: -1, lendablePercent: 101, borrowingLimitPercent: -1, limitResponse: {type: Reject, queuing: {}}}}}`,
			want: []string{
				"spec.limited.nominalConcurrencyShares: Invalid value: -1: must be a non-negative integer",
				"spec.limited.lendablePercent: Invalid value: 101: must be between 0 and 100, inclusive",
				"spec.limited.borrowingLimitPercent: Invalid value: -1: if specified, must be a non-negative integer",
				"spec.limited.limitResponse.queuing: Forbidden",
			}},
		{line: line(), def: PriorityLevelConfigurations, obj: pl + `{type: Limited, limited: {limitResponse: {type: Queue, queuing: {queues: 10000000, handSize: 8, queueLengthLimit: -1}}}}}`,
			want: []string{
				"spec.limited.limitResponse.queuing.queueLengthLimit: Invalid value: -1: must be positive",
				"spec.limited.limitResponse.queuing.handSize: Invalid value: 8: required entropy bits of deckSize 10000000 and handSize 8 should not be greater than 60",
			}},
		{line: line(), def: PriorityLevelConfigurations, obj: pl + `{type: Limited, limited: {limitResponse: {type: Queue}}}}`,
			want: []string{"spec.limited.limitResponse.queuing: Required value"}},
		{line: line(), def: PriorityLevelConfigurations, obj: pl + `{}}`, want: []string{"spec.type: Required value"}},
		{line: line(), def: PriorityLevelConfigurations, obj: `{kind: PriorityLevelConfiguration, metadata: {name: catch-all}, spec: {type: Limited, limited: {nominalConcurrencyShares: 6, limitResponse: {type: Reject}}}}`,
			want: []string{`spec: Invalid value: {"Type":"Limited","Limited":{"NominalConcurrencyShares":6,"LimitResponse":{"Type":"Reject","Queuing":null},"LendablePercent":0,"BorrowingLimitPercent":null},"Exempt":null}: spec of 'catch-all' must equal the fixed value`}},
		// exempt's shares may change.
		{line: line(), def: PriorityLevelConfigurations, obj: `{kind: PriorityLevelConfiguration, metadata: {name: exempt}, spec: {type: Exempt, exempt: {nominalConcurrencyShares: 3}}}`},
		// An update that keeps the spec is not checked by the declared rules.
		{line: line(), def: PriorityLevelConfigurations, old: pl + `{type: Limited}}`, obj: `{kind: PriorityLevelConfiguration, metadata: {name: p, labels: {a: b}}, spec: {type: Limited}}`},
	} {
		h := tc.def().Hooks
		obj := decodeYAML(t, tc.obj)
		h.(registry.Defaulter).Default(obj)
		var errs []string
		if tc.old != "" {
			old := decodeYAML(t, tc.old)
			h.(registry.Defaulter).Default(old)
			for _, e := range h.(registry.Validator).ValidateUpdate(obj, old) {
				errs = append(errs, e.Error())
			}
		} else {
			for _, e := range h.(registry.Validator).Validate(obj) {
				errs = append(errs, e.Error())
			}
		}
		if !reflect.DeepEqual(errs, tc.want) {
			t.Errorf("%s: got\n%q\nwant\n%q", tc.line, errs, tc.want)
		}
	}
}

// A priority level gets upstream's shares, lendable percent and queues.
func TestPriorityLevelDefaults(t *testing.T) {
	obj := decodeYAML(t, `{kind: PriorityLevelConfiguration, metadata: {name: p}, spec: {type: Limited, limited: {limitResponse: {type: Queue, queuing: {queues: 16}}}}}`)
	PriorityLevelConfigurations().Hooks.(registry.Defaulter).Default(obj)
	var pl flowcontrolv1.PriorityLevelConfiguration
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj, &pl); err != nil {
		t.Fatal(err)
	}
	l := pl.Spec.Limited
	if *l.NominalConcurrencyShares != 30 || *l.LendablePercent != 0 || *l.LimitResponse.Queuing != (flowcontrolv1.QueuingConfiguration{Queues: 16, HandSize: 8, QueueLengthLimit: 50}) {
		t.Errorf("defaulted: %+v %+v", l, l.LimitResponse.Queuing)
	}
	fs := decodeYAML(t, `{kind: FlowSchema, metadata: {name: f}, spec: {priorityLevelConfiguration: {name: p}}}`)
	FlowSchemas().Hooks.(registry.Defaulter).Default(fs)
	if got := fs["spec"].(map[string]any)["matchingPrecedence"]; got != int64(1000) {
		t.Errorf("matchingPrecedence: %v", got)
	}
}

// The bootstrap objects pass validation and are left as they are by
// defaulting, as upstream requires of its own.
func TestFlowcontrolBootstrapValid(t *testing.T) {
	for _, fs := range BootstrapFlowSchemas() {
		c := fs.DeepCopy()
		flowSchemaRules{}.defaults(c)
		if !equality.Semantic.DeepEqual(c, &fs) {
			t.Errorf("%s: defaulting changed it", fs.Name)
		}
		if errs := (flowSchemaRules{}).validate(&fs, nil); len(errs) > 0 {
			t.Errorf("%s: %v", fs.Name, errs)
		}
	}
	for _, pl := range BootstrapPriorityLevels() {
		c := pl.DeepCopy()
		priorityLevelRules{}.defaults(c)
		if !equality.Semantic.DeepEqual(c, &pl) {
			t.Errorf("%s: defaulting changed it", pl.Name)
		}
		if errs := (priorityLevelRules{}).validate(&pl, nil); len(errs) > 0 {
			t.Errorf("%s: %v", pl.Name, errs)
		}
	}
	if n, m := len(BootstrapFlowSchemas()), len(BootstrapPriorityLevels()); n != 11 || m != 8 {
		t.Errorf("%d FlowSchemas, %d levels; upstream has 11 and 8", n, m)
	}
}

// A list's Table has the schemas in matching order.
func TestFlowSchemaTableOrder(t *testing.T) {
	objs := []map[string]any{
		decodeYAML(t, `{metadata: {name: b}, spec: {matchingPrecedence: 5}}`),
		decodeYAML(t, `{metadata: {name: c}, spec: {matchingPrecedence: 1}}`),
		decodeYAML(t, `{metadata: {name: a}, spec: {matchingPrecedence: 5}}`),
	}
	FlowSchemas().Hooks.(registry.TableListSorter).SortTableList(objs)
	var names []string
	for _, o := range objs {
		names = append(names, objectName(o))
	}
	if want := []string{"c", "a", "b"}; !reflect.DeepEqual(names, want) {
		t.Errorf("order %v, want %v", names, want)
	}
}
