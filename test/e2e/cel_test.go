package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestCELRules runs the cases of testdata/cel (see cel_script_test.go)
// on one server: each rule of seed 001's "Validation Rules Examples" and
// "Transition rules examples" tables, the CronTab rules, messages,
// reasons, field paths, optionalOldSelf, compile and cost errors at CRD
// write, ratcheting and the status subresource, with the output kubectl
// prints. The expected outputs are kube-apiserver 1.37's: compat/celscripts
// replays the scripts through k8s.io/apiextensions-apiserver's CRD
// validation and CEL validator and reports any expectation upstream does
// not share.
func TestCELRules(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob(filepath.Join("testdata", "cel", "*.txtar"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no cases in testdata/cel")
	}
	scripts := make([]*celScript, len(files))
	for i, f := range files {
		scripts[i] = loadCELScript(t, f)
	}
	srv := startServer(t, t.TempDir())
	for _, s := range scripts {
		t.Run(strings.TrimSuffix(filepath.Base(s.file), ".txtar"), func(t *testing.T) {
			t.Parallel()
			s.run(t, srv)
		})
	}
}

// TestCELRuleBudget sends objects that make rules accepted on their
// estimated cost spend more than upstream's runtime limits: one rule
// call, or one messageExpression call, over the per-call limit
// (1,000,000), and rules on the items of a list, each call under it,
// over the per-request budget (10,000,000).
// Each request gets a 422 in upstream's words within hostileLimit, and
// the server goes on answering.
func TestCELRuleBudget(t *testing.T) {
	t.Parallel()
	srv := startServer(t, t.TempDir())
	dir := t.TempDir()
	write := func(name, data string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// The list rule's estimate is just under the per-expression limit
	// (maxItems 1000 would be over it); the rows rule's, times the ten
	// rows, too, and the six of them stay under the per-CRD limit.
	var rowRules strings.Builder
	for i := range 6 {
		fmt.Fprintf(&rowRules, "                  - rule: self.cells.all(x, self.cells.all(y, x == y || x != y || %d == 0))\n", i)
	}
	write("crd.yaml", `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: things.budget.cel.example.com
spec:
  group: budget.cel.example.com
  scope: Namespaced
  names: {plural: things, singular: thing, kind: Thing}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              list:
                type: array
                maxItems: 900
                items: {type: string, maxLength: 4}
                x-kubernetes-validations:
                - rule: self.all(x, self.all(y, x == y || x != y))
              messages:
                type: array
                maxItems: 900
                items: {type: string, maxLength: 4}
                x-kubernetes-validations:
                - rule: size(self) < 10
                  message: too many
                  messageExpression: "self.all(x, self.all(y, x == y || x != y)) ? 'too many' : 'many'"
              rows:
                type: array
                maxItems: 10
                items:
                  type: object
                  x-kubernetes-validations:
`+rowRules.String()+`                  properties:
                    cells:
                      type: array
                      maxItems: 280
                      items: {type: string, maxLength: 4}
`)
	cells := func(n int) string {
		s := make([]string, n)
		for i := range s {
			s[i] = fmt.Sprintf("%q", fmt.Sprintf("%03x", i))
		}
		return "[" + strings.Join(s, ", ") + "]"
	}
	object := func(name, spec string) string {
		return "apiVersion: budget.cel.example.com/v1\nkind: Thing\nmetadata: {name: " + name + "}\nspec: " + spec + "\n"
	}
	write("call.yaml", object("call", "{list: "+cells(900)+"}"))
	write("message.yaml", object("message", "{messages: "+cells(900)+"}"))
	rows := make([]string, 10)
	for i := range rows {
		rows[i] = "{cells: " + cells(280) + "}"
	}
	write("request.yaml", object("request", "{rows: ["+strings.Join(rows, ", ")+"]}"))
	write("small.yaml", object("small", "{list: [a, b], messages: [a], rows: [{cells: [a, b]}]}"))

	if out, stderr, err := kubectlIn(dir, srv, "apply", "-f", "crd.yaml"); err != nil || stderr != "" {
		t.Fatalf("kubectl apply -f crd.yaml: %v\n%s%s", err, out, stderr)
	}
	waitEstablished(t, srv, "things.budget.cel.example.com")

	for _, c := range []struct{ file, want string }{
		{"call.yaml", `The Thing "call" is invalid: spec.list: Invalid value: "array": 'operation cancelled: actual cost limit exceeded': no further validation rules will be run due to call cost exceeds limit for rule: self.all(x, self.all(y, x == y || x != y))`},
		{"message.yaml", `The Thing "message" is invalid: spec.messages: Invalid value: "array": no further validation rules will be run due to call cost exceeds limit for messageExpression: "self.all(x, self.all(y, x == y || x != y)) ? 'too many' : 'many'"`},
		{"request.yaml", `The Thing "request" is invalid: spec.rows[2]: Invalid value: "object": validation failed due to running out of cost budget, no further validation rules will be run`},
	} {
		// While the rules run, the server answers other requests.
		done := make(chan struct{})
		go func() {
			defer close(done)
			start := time.Now()
			_, stderr, err := kubectlIn(dir, srv, "apply", "-f", c.file)
			took := time.Since(start)
			if err == nil {
				t.Errorf("kubectl apply -f %s succeeded, want the runtime budget to stop it", c.file)
			} else if got := normalizeOutput(stderr); got != c.want {
				t.Errorf("kubectl apply -f %s printed:\n%s\nwant:\n%s", c.file, got, c.want)
			}
			if took > hostileLimit {
				t.Errorf("kubectl apply -f %s took %v, want under %v", c.file, took, hostileLimit)
			}
			t.Logf("kubectl apply -f %s answered in %v", c.file, took)
		}()
		time.Sleep(300 * time.Millisecond)
		start := time.Now()
		if _, stderr, err := kubectlIn(dir, srv, "get", "--raw", "/apis/budget.cel.example.com/v1/namespaces/default/things"); err != nil {
			t.Errorf("listing things while %s is validated: %v\n%s", c.file, err, stderr)
		}
		t.Logf("a list during the apply of %s answered in %v", c.file, time.Since(start))
		<-done
	}

	// The server still serves, and the same rules accept small objects.
	if got, want := kubectlLine(t, srv, "apply", "-f", filepath.Join(dir, "small.yaml")), "thing.budget.cel.example.com/small created"; got != want {
		t.Errorf("kubectl apply -f small.yaml printed %q, want %q", got, want)
	}
	if got := kubectl(t, srv, "get", "--raw", "/readyz"); got != "ok" {
		t.Errorf("/readyz answered %q after the expensive requests", got)
	}
}

// hostileLimit bounds how long a request stopped by the CEL runtime
// budget may take through kubectl: a budget is only a defence if it is
// spent quickly. Spending the per-request budget of 10,000,000 takes
// cel-go's cost-tracking interpreter about 5 s of CPU on the 2-core test
// machine, upstream's validator and crdserver's alike (most of it in
// interpreter.refValStack.drop); the limit leaves room for a loaded
// machine.
const hostileLimit = 30 * time.Second
