package cel

import (
	"context"
	"errors"
	"maps"
	"strings"
	"testing"
)

// TestPolicyVariables: every variable of a policy expression reads what
// PolicyVars hold, null where they hold nothing, and request and
// namespaceObject are built once per evaluation, only when read.
func TestPolicyVariables(t *testing.T) {
	obj := map[string]any{"metadata": map[string]any{"name": "w"}}
	calls := map[string]int{}
	vars := func() PolicyVars {
		return PolicyVars{
			Object: obj, Params: map[string]any{"max": int64(3)},
			Variables: map[string]any{"v": "x"},
			Request: func() map[string]any {
				calls["request"]++
				return map[string]any{"operation": "CREATE"}
			},
			Namespace: func() map[string]any {
				calls["namespace"]++
				return nil
			},
		}
	}
	for _, c := range []struct {
		expr      string
		want      any
		request   int // builds of the request
		namespace int
	}{
		{"object.metadata.name", "w", 0, 0},
		{"oldObject == null", true, 0, 0},
		{"params.max", int64(3), 0, 0},
		{"variables.v", "x", 0, 0},
		{"request.operation + request.operation", "CREATECREATE", 1, 0},
		{"namespaceObject == null && namespaceObject == null", true, 0, 1},
		{"[1, 2].all(i, i > 0) && request.operation == 'CREATE'", true, 1, 0},
	} {
		clear(calls)
		e, err := CompilePolicyExpression(c.expr, AnyResult)
		if err != nil {
			t.Fatalf("%s: %v", c.expr, err)
		}
		got, _, err := e.Eval(context.Background(), vars())
		if err != nil || got != c.want {
			t.Errorf("%s = %v, %v; want %v", c.expr, got, err, c.want)
		}
		if calls["request"] != c.request || calls["namespace"] != c.namespace {
			t.Errorf("%s built the request %d and the namespace %d times, want %d and %d", c.expr, calls["request"], calls["namespace"], c.request, c.namespace)
		}
	}
	e, err := CompilePolicyExpression("variables.size() == 0 && request == null", BoolResult)
	if err != nil {
		t.Fatal(err)
	}
	if got, _, err := e.Eval(context.Background(), PolicyVars{}); err != nil || got != true {
		t.Errorf("no variables and no request: %v, %v; want true", got, err)
	}
}

// TestCancelledEvaluation: an expression that loops stops when its
// context ends, as under upstream; one that does not loop never looked at
// the context, and still does not.
func TestCancelledEvaluation(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	loops, err := CompilePolicyExpression("params.items.all(i, i >= 0)", BoolResult)
	if err != nil {
		t.Fatal(err)
	}
	items := make([]any, 1000) // past the iterations between checks
	for i := range items {
		items[i] = int64(i)
	}
	if _, _, err := loops.Eval(ctx, PolicyVars{Params: map[string]any{"items": items}}); err == nil || !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "operation interrupted") {
		t.Errorf("a loop under a cancelled context: %v, want it interrupted", err)
	}
	plain, err := CompilePolicyExpression("1 + 1 == 2", BoolResult)
	if err != nil {
		t.Fatal(err)
	}
	if got, _, err := plain.Eval(ctx, PolicyVars{}); err != nil || got != true {
		t.Errorf("no loop under a cancelled context: %v, %v; want true", got, err)
	}
}

// Variables given by PolicyVars.Variable are evaluated when read: one
// that fails fails the expressions reading it only, in upstream's words.
func TestLazyPolicyVariables(t *testing.T) {
	reads := map[string]int{}
	vars := PolicyVars{
		VariableNames: []string{"ok", "bad", "list"},
		Variable: func(name string) (any, error) {
			reads[name]++
			switch name {
			case "ok":
				return "x", nil
			case "list":
				return []any{int64(1), int64(2)}, nil
			}
			return nil, errors.New("no such key: missing")
		},
	}
	for _, c := range []struct {
		expr  string
		want  any
		err   string
		reads map[string]int
	}{
		{expr: "variables.ok + 'y'", want: "xy", reads: map[string]int{"ok": 1}},
		{expr: "size(variables.list) == 2", want: true, reads: map[string]int{"list": 1}},
		{expr: "variables.bad == 1", err: `composited variable "bad" fails to evaluate: no such key: missing`, reads: map[string]int{"bad": 1}},
		{expr: "variables.ok == 'x' || variables.bad == 1", want: true, reads: map[string]int{"ok": 1}},
	} {
		clear(reads)
		e, err := CompilePolicyExpression(c.expr, AnyResult)
		if err != nil {
			t.Fatalf("%s: %v", c.expr, err)
		}
		got, _, err := e.Eval(context.Background(), vars)
		switch {
		case c.err != "" && (err == nil || err.Error() != c.err):
			t.Errorf("%s: error %v, want %q", c.expr, err, c.err)
		case c.err == "" && (err != nil || got != c.want):
			t.Errorf("%s = %v, %v; want %v", c.expr, got, err, c.want)
		}
		if !maps.Equal(reads, c.reads) {
			t.Errorf("%s read %v, want %v", c.expr, reads, c.reads)
		}
	}
}
