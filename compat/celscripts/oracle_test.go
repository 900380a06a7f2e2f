// Package celscripts replays the CEL scripts of test/e2e/testdata/cel
// through kube-apiserver's own code, and fails for every command whose
// expected standard error differs from what upstream would make kubectl
// print. The e2e test checks crdserver against the scripts; this checks
// the scripts against upstream, so together they compare both answers.
//
//	cd compat && go test ./celscripts
//
// It emulates, in process and with the k8s.io modules of the version
// crdserver follows: CRD create and update validation
// (validation.ValidateCustomResourceDefinition[Update]), and for objects
// the custom resource strategy's order: OpenAPI validation with
// ratcheting, list-type checks, the blocking-error rule, then the CEL
// validator with the runtime budget and ratcheting, warnings collected as
// kubectl prints them. apply, create and replace are taken as writing
// the file's object, patch --type=merge as a merge patch; status writes
// take only status from the request. Other commands (get, label, scale,
// JSON patches), objects of CRDs whose versions have schemas of their
// own, and the schema-only status validation are skipped, so a case that
// depends on them is not fully checked.
package celscripts

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"golang.org/x/tools/txtar"
	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel/model"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/listtype"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/cel/common"
	"k8s.io/apiserver/pkg/warning"
	"sigs.k8s.io/yaml"
)

func decode(data []byte) map[string]any {
	j, err := yaml.YAMLToJSON(data)
	if err != nil {
		panic(err)
	}
	var m map[string]any
	if err := utiljson.Unmarshal(j, &m); err != nil {
		panic(err)
	}
	return m
}

const crdTemplate = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: things.$GROUP
spec:
  group: $GROUP
  scope: Namespaced
  names:
    plural: things
    singular: thing
    kind: Thing
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
`

// rec collects the warnings the validator adds to the context.
type rec struct{ ws []string }

func (r *rec) AddWarning(agent, text string) { r.ws = append(r.ws, text) }

type state struct {
	group  string
	files  map[string]string
	crds   map[string]*apiextensions.CustomResourceDefinition
	objs   map[string]map[string]any
	s      *structuralschema.Structural
	valid  *cel.Validator
	sv     apiservervalidation.SchemaValidator
	status bool
	kind   string
}

func TestScriptsMatchUpstream(t *testing.T) {
	files, err := filepath.Glob("../../test/e2e/testdata/cel/*.txtar")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scripts found: %v", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			report = t.Errorf
			run(f)
		})
	}
}

// report is how run reports a command whose expectation upstream does not
// share.
var report func(format string, args ...any)

// skipped is what exec answers for a command it cannot replay.
const skipped = "\x00skipped"

var selfType = regexp.MustCompile(`\bselfType[0-9]+\b`)

func run(file string) {
	ar, err := txtar.ParseFile(file)
	if err != nil {
		panic(err)
	}
	name := strings.TrimSuffix(filepath.Base(file), ".txtar")
	st := &state{group: name + ".cel.example.com", files: map[string]string{}, crds: map[string]*apiextensions.CustomResourceDefinition{}, objs: map[string]map[string]any{}}
	for _, f := range ar.Files {
		d := string(f.Data)
		if strings.HasSuffix(f.Name, ".schema.yaml") {
			var b strings.Builder
			b.WriteString(crdTemplate)
			for _, l := range strings.Split(strings.TrimRight(d, "\n"), "\n") {
				b.WriteString("        " + l + "\n")
			}
			d = b.String()
		}
		st.files[f.Name] = strings.ReplaceAll(d, "$GROUP", st.group)
	}
	lines := strings.Split(string(ar.Comment), "\n")
	type cmd struct {
		line   int
		text   string
		stderr []string
		fail   bool
	}
	var cmds []*cmd
	for i, l := range lines {
		l = strings.TrimRight(l, " ")
		switch {
		case l == "" || strings.HasPrefix(l, "#") || strings.HasPrefix(l, "> ") || l == ">":
		case strings.HasPrefix(l, "2>"):
			c := cmds[len(cmds)-1]
			c.stderr = append(c.stderr, strings.TrimPrefix(strings.TrimPrefix(l, "2>"), " "))
		default:
			c := &cmd{line: i + 1, text: strings.ReplaceAll(l, "$GROUP", st.group)}
			c.text = strings.TrimPrefix(c.text, "retry ")
			if strings.HasPrefix(c.text, "! ") {
				c.fail = true
				c.text = c.text[2:]
			}
			cmds = append(cmds, c)
		}
	}
	for _, c := range cmds {
		got, handled := st.exec(c.text)
		if !handled || got == skipped {
			continue
		}
		want := strings.ReplaceAll(strings.Join(c.stderr, "\n"), "$GROUP", st.group)
		g := selfType.ReplaceAllString(norm(got), "selfTypeN")
		w := selfType.ReplaceAllString(norm(want), "selfTypeN")
		if g != w {
			report("%s:%d: %s\n  upstream:\n%s\n  script:\n%s", file, c.line, c.text, indent(g), indent(w))
		}
	}
}

func norm(s string) string {
	ls := strings.Split(strings.TrimSpace(s), "\n")
	for i := range ls {
		ls[i] = strings.TrimRight(ls[i], " ")
	}
	return strings.Join(ls, "\n")
}

func indent(s string) string { return "    " + strings.ReplaceAll(s, "\n", "\n    ") }

func words(s string) []string {
	var out []string
	var cur strings.Builder
	in, q := false, false
	for _, r := range s {
		switch {
		case r == '\'':
			in, q = !in, true
		case r == ' ' && !in:
			if cur.Len() > 0 || q {
				out = append(out, cur.String())
			}
			cur.Reset()
			q = false
		default:
			cur.WriteRune(r)
		}
	}
	if cur.Len() > 0 || q {
		out = append(out, cur.String())
	}
	return out
}

// exec returns the predicted standard error.
func (st *state) exec(text string) (string, bool) {
	w := words(text)
	verb := w[0]
	args := w[1:]
	if verb == "crd" {
		return st.crd(st.files[args[0]]), true
	}
	if verb != "kubectl" {
		return "", false
	}
	sub := args[0]
	flags := map[string]string{}
	var pos []string
	for i := 1; i < len(args); i++ {
		a := args[i]
		if strings.HasPrefix(a, "-") {
			if k, v, ok := strings.Cut(a, "="); ok {
				flags[k] = v
			} else if i+1 < len(args) {
				flags[a] = args[i+1]
				i++
			}
			continue
		}
		pos = append(pos, a)
	}
	dry := flags["--dry-run"] == "server"
	switch sub {
	case "apply", "create", "replace":
		data := st.files[flags["-f"]]
		if strings.Contains(data, "kind: CustomResourceDefinition") {
			return st.crd(data), true
		}
		obj := decode([]byte(data))
		meta := obj["metadata"].(map[string]any)
		name, _ := meta["name"].(string)
		if name == "" {
			name = meta["generateName"].(string) + "$SUFFIX"
			meta["name"] = name
		}
		old := st.objs[name]
		if old != nil && sub == "create" {
			return "exists", true
		}
		if flags["--subresource"] == "status" && old != nil {
			n := deepCopy(old)
			n["status"] = obj["status"]
			obj = n
		} else if st.status && old != nil {
			obj["status"] = old["status"]
		} else if st.status {
			delete(obj, "status")
		}
		return st.write(name, obj, old, dry), true
	case "patch":
		if flags["--type"] != "merge" {
			return "", false
		}
		if st.sv == nil {
			return skipped, true
		}
		name := pos[1]
		old := st.objs[name]
		oj, _ := yaml.Marshal(old)
		ojs, _ := yaml.YAMLToJSON(oj)
		nj, err := jsonpatch.MergePatch(ojs, []byte(flags["-p"]))
		if err != nil {
			panic(err)
		}
		obj := decode(nj)
		if flags["--subresource"] == "status" {
			n := deepCopy(old)
			n["status"] = obj["status"]
			obj = n
		} else if st.status {
			obj["status"] = old["status"]
		}
		return st.write(name, obj, old, dry), true
	}
	return "", false
}

func deepCopy(m map[string]any) map[string]any {
	b, _ := yaml.Marshal(m)
	return decode(b)
}

func (st *state) write(name string, obj, old map[string]any, dry bool) string {
	if st.sv == nil {
		return skipped
	}
	r := &rec{}
	ctx := warning.WithWarningRecorder(context.Background(), r)
	var opts []cel.Option
	var oldAny any
	var errs field.ErrorList
	if old != nil {
		oldAny = old
		co := common.NewCorrelatedObject(obj, old, &model.Structural{Structural: st.s})
		opts = append(opts, cel.WithRatcheting(co))
		errs = apiservervalidation.ValidateCustomResourceUpdate(nil, obj, old, st.sv, apiservervalidation.WithRatcheting(co))
		if oldErrs := listtype.ValidateListSetsAndMaps(nil, st.s, old); len(oldErrs) == 0 {
			errs = append(errs, listtype.ValidateListSetsAndMaps(nil, st.s, obj)...)
		}
	} else {
		errs = apiservervalidation.ValidateCustomResource(nil, obj, st.sv)
		errs = append(errs, listtype.ValidateListSetsAndMaps(nil, st.s, obj)...)
	}
	blocked := false
	for _, e := range errs {
		if e.Type == field.ErrorTypeNotSupported || e.Type == field.ErrorTypeRequired || e.Type == field.ErrorTypeTooLong || e.Type == field.ErrorTypeTooMany || e.Type == field.ErrorTypeTypeInvalid {
			blocked = true
		}
	}
	if blocked {
		errs = append(errs, field.Invalid(nil, nil, "some validation rules were not checked because the object was invalid; correct the existing errors to complete validation"))
	} else if st.valid != nil {
		celErrs, _ := st.valid.Validate(ctx, nil, st.s, obj, oldAny, celconfig.RuntimeCELCostBudget, opts...)
		errs = append(errs, celErrs...)
	}
	var out []string
	for _, w := range r.ws {
		out = append(out, "Warning: "+w)
	}
	if len(errs) > 0 {
		out = append(out, invalid(st.kind, name, errs))
		return strings.Join(out, "\n")
	}
	if !dry {
		st.objs[name] = obj
	}
	return strings.Join(out, "\n")
}

func invalid(kind, name string, errs field.ErrorList) string {
	seen := map[string]bool{}
	var msgs []string
	for _, e := range errs {
		m := fmt.Sprintf("%s: %s", e.Field, e.ErrorBody())
		if seen[m] {
			continue
		}
		seen[m] = true
		msgs = append(msgs, m)
	}
	prefix := fmt.Sprintf("The %s %q is invalid: ", kind, name)
	if len(msgs) == 1 {
		return prefix + msgs[0]
	}
	return prefix + "\n* " + strings.Join(msgs, "\n* ")
}

func (st *state) crd(data string) string {
	v1 := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.Unmarshal([]byte(data), v1); err != nil {
		panic(err)
	}
	apiextensionsv1.SetObjectDefaults_CustomResourceDefinition(v1)
	in := &apiextensions.CustomResourceDefinition{}
	if err := apiextensionsv1.Convert_v1_CustomResourceDefinition_To_apiextensions_CustomResourceDefinition(v1, in, nil); err != nil {
		panic(err)
	}
	var errs field.ErrorList
	old := st.crds[in.Name]
	if old != nil {
		in.ResourceVersion = "1"
		errs = validation.ValidateCustomResourceDefinitionUpdate(context.Background(), in, old)
	} else {
		errs = validation.ValidateCustomResourceDefinition(context.Background(), in)
	}
	if len(errs) > 0 {
		return invalid("CustomResourceDefinition", in.Name, errs)
	}
	in.ResourceVersion = "1"
	st.crds[in.Name] = in
	if in.Spec.Validation == nil {
		// Versions with schemas of their own: objects are not replayed.
		st.valid, st.sv = nil, nil
		return ""
	}
	ss, err := structuralschema.NewStructural(in.Spec.Validation.OpenAPIV3Schema)
	if err != nil {
		panic(err)
	}
	st.s = ss
	st.valid = cel.NewValidator(ss, true, celconfig.PerCallLimit)
	st.sv, _, err = apiservervalidation.NewSchemaValidator(in.Spec.Validation.OpenAPIV3Schema)
	if err != nil {
		panic(err)
	}
	st.kind = in.Spec.Names.Kind
	st.status = in.Spec.Subresources != nil && in.Spec.Subresources.Status != nil
	return ""
}
