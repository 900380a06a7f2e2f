package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"slices"
	"strconv"
	"strings"
)

// Upstream publishes its documents with enums off
// (hack/update-openapi-spec.sh runs kube-apiserver with
// --feature-gates=OpenAPIEnums=false), but a kube-apiserver serves them on
// (the gate is on by default since 1.24): a string field of an enum type
// lists its values in "enum", and its description ends with a section that
// says what each one means, which kubectl explain prints. The published
// models lack both, so gen reads them from the definitions kube-apiserver
// serves, the generated Go source of k8s.io/kubernetes/pkg/generated/openapi,
// and puts them back where the published models had them taken out.

// enumHeader starts the section of a description that describes the enum
// values (k8s.io/apiserver/pkg/util/openapi, which takes it out when the
// gate is off, along with the blank line before it).
const enumHeader = "Possible enum values:"

// enumSite is a schema of a generated definition that has enum values, a
// description of them, or both.
type enumSite struct {
	// path leads from the model to the schema: "properties" and a name,
	// "items", "additionalProperties", or a junctor and an index.
	path        []string
	enum        []string
	description string
}

// enumSites reads the generated definitions in file, a
// zz_generated.openapi.go, and returns the enum sites of each model, by
// model name, and the name of every model the file defines.
//
// It reads the Go source rather than running it, so that gen needs no
// k8s.io/kubernetes in go.mod: each definition is a function returning a
// composite literal of kube-openapi's spec types, and the literals are read
// along the fields that lead to other schemas. An enum anywhere else in a
// definition is an error, not a site missed.
func enumSites(file string) (sites map[string][]enumSite, models map[string]bool, err error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, file, nil, parser.SkipObjectResolution)
	if err != nil {
		return nil, nil, err
	}
	imports := map[string]string{} // path by the name the file gives it
	for _, imp := range f.Imports {
		path, _ := strconv.Unquote(imp.Path.Value)
		name := path[strings.LastIndex(path, "/")+1:]
		if imp.Name != nil {
			name = imp.Name.Name
		}
		imports[name] = path
	}
	funcs := map[string]*ast.FuncDecl{}
	for _, d := range f.Decls {
		if fd, ok := d.(*ast.FuncDecl); ok {
			funcs[fd.Name.Name] = fd
		}
	}
	get := funcs["GetOpenAPIDefinitions"]
	if get == nil {
		return nil, nil, fmt.Errorf("%s: no GetOpenAPIDefinitions", file)
	}
	table, ok := returnedLiteral(get)
	if !ok {
		return nil, nil, fmt.Errorf("%s: GetOpenAPIDefinitions does not return a map literal", file)
	}

	sites = map[string][]enumSite{}
	models = map[string]bool{}
	for _, e := range table.Elts {
		kv, _ := e.(*ast.KeyValueExpr)
		name, okName := modelNameOf(kv, imports)
		fn, okFn := definitionFunc(kv, funcs)
		if !okName || !okFn {
			return nil, nil, fmt.Errorf("%s: unexpected entry of GetOpenAPIDefinitions at %s", file, fset.Position(e.Pos()))
		}
		models[name] = true
		var found []enumSite
		if def, ok := returnedLiteral(fn); ok {
			for _, e := range def.Elts {
				if kv, ok := e.(*ast.KeyValueExpr); ok && isIdent(kv.Key, "Schema") {
					if err := readSchema(kv.Value, nil, &found); err != nil {
						return nil, nil, fmt.Errorf("%s: %s: %w", file, fn.Name.Name, err)
					}
				}
			}
		}
		if n, listed := countEnums(fn), countListed(found); n != listed {
			return nil, nil, fmt.Errorf("%s: %s has %d enum lists, %d of them where gen looks for them", file, fn.Name.Name, n, listed)
		}
		if len(found) > 0 {
			sites[name] = found
		}
	}
	return sites, models, nil
}

// returnedLiteral is the composite literal fn returns, if its body is one
// return statement of one.
func returnedLiteral(fn *ast.FuncDecl) (*ast.CompositeLit, bool) {
	if fn.Body == nil || len(fn.Body.List) != 1 {
		return nil, false
	}
	ret, ok := fn.Body.List[0].(*ast.ReturnStmt)
	if !ok || len(ret.Results) != 1 {
		return nil, false
	}
	lit, ok := ret.Results[0].(*ast.CompositeLit)
	return lit, ok
}

// modelNameOf reads the key of a GetOpenAPIDefinitions entry,
// pkg.Type{}.OpenAPIModelName(), as the name that method returns: the
// package path with its domain reversed, dotted, and the type's name
// (k8s.io/api/apps/v1 DeploymentStrategy →
// io.k8s.api.apps.v1.DeploymentStrategy).
func modelNameOf(kv *ast.KeyValueExpr, imports map[string]string) (string, bool) {
	if kv == nil {
		return "", false
	}
	call, ok := kv.Key.(*ast.CallExpr)
	if !ok || len(call.Args) != 0 {
		return "", false
	}
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok || sel.Sel.Name != "OpenAPIModelName" {
		return "", false
	}
	lit, ok := sel.X.(*ast.CompositeLit)
	if !ok {
		return "", false
	}
	typ, ok := lit.Type.(*ast.SelectorExpr)
	if !ok {
		return "", false
	}
	pkg, ok := typ.X.(*ast.Ident)
	if !ok {
		return "", false
	}
	path, ok := imports[pkg.Name]
	if !ok {
		return "", false
	}
	domain, rest, _ := strings.Cut(path, "/")
	parts := strings.Split(domain, ".")
	slices.Reverse(parts)
	return strings.Join(append(parts, strings.ReplaceAll(rest, "/", "."), typ.Sel.Name), "."), true
}

// definitionFunc is the function a GetOpenAPIDefinitions entry calls.
func definitionFunc(kv *ast.KeyValueExpr, funcs map[string]*ast.FuncDecl) (*ast.FuncDecl, bool) {
	if kv == nil {
		return nil, false
	}
	call, ok := kv.Value.(*ast.CallExpr)
	if !ok {
		return nil, false
	}
	id, ok := call.Fun.(*ast.Ident)
	if !ok {
		return nil, false
	}
	fn, ok := funcs[id.Name]
	return fn, ok
}

// readSchema reads e, a spec.Schema literal (or a pointer to one) at path,
// appending its enum sites and those below it to found.
func readSchema(e ast.Expr, path []string, found *[]enumSite) error {
	lit, ok := literal(e)
	if !ok {
		return fmt.Errorf("%s: not a schema literal", strings.Join(path, "/"))
	}
	for _, e := range lit.Elts {
		kv, ok := e.(*ast.KeyValueExpr)
		if !ok || !isIdent(kv.Key, "SchemaProps") {
			continue
		}
		if err := readProps(kv.Value, path, found); err != nil {
			return err
		}
	}
	return nil
}

// readProps reads e, a spec.SchemaProps literal at path.
func readProps(e ast.Expr, path []string, found *[]enumSite) error {
	lit, ok := literal(e)
	if !ok {
		return fmt.Errorf("%s: SchemaProps is not a literal", strings.Join(path, "/"))
	}
	site := enumSite{path: slices.Clone(path)}
	hasEnum := false
	below := func(v ast.Expr, key ...string) error {
		return readSchema(v, append(slices.Clone(path), key...), found)
	}
	for _, e := range lit.Elts {
		kv, ok := e.(*ast.KeyValueExpr)
		if !ok {
			continue
		}
		key, _ := kv.Key.(*ast.Ident)
		if key == nil {
			continue
		}
		var err error
		switch key.Name {
		case "Description":
			site.description, err = stringValue(kv.Value)
		case "Enum":
			hasEnum = true
			site.enum, err = stringValues(kv.Value)
		case "Properties":
			props, ok := kv.Value.(*ast.CompositeLit)
			if !ok {
				return fmt.Errorf("%s: Properties is not a literal", strings.Join(path, "/"))
			}
			for _, p := range props.Elts {
				pkv, ok := p.(*ast.KeyValueExpr)
				if !ok {
					return fmt.Errorf("%s: a property is not a key and value", strings.Join(path, "/"))
				}
				name, err := stringValue(pkv.Key)
				if err != nil {
					return err
				}
				if err := below(pkv.Value, "properties", name); err != nil {
					return err
				}
			}
		case "Items", "AdditionalProperties":
			// &spec.SchemaOrArray{Schema: &spec.Schema{...}} and
			// &spec.SchemaOrBool{Allows: true, Schema: &spec.Schema{...}}
			or, ok := literal(kv.Value)
			if !ok {
				return fmt.Errorf("%s: %s is not a literal", strings.Join(path, "/"), key.Name)
			}
			for _, e := range or.Elts {
				if okv, ok := e.(*ast.KeyValueExpr); ok && isIdent(okv.Key, "Schema") {
					err = below(okv.Value, lowerFirst(key.Name))
				}
			}
		case "AllOf", "AnyOf", "OneOf":
			list, ok := kv.Value.(*ast.CompositeLit)
			if !ok {
				return fmt.Errorf("%s: %s is not a literal", strings.Join(path, "/"), key.Name)
			}
			for i, s := range list.Elts {
				if err := below(s, lowerFirst(key.Name), strconv.Itoa(i)); err != nil {
					return err
				}
			}
		}
		if err != nil {
			return fmt.Errorf("%s: %s: %w", strings.Join(path, "/"), key.Name, err)
		}
	}
	if hasEnum || strings.Contains(site.description, enumHeader) {
		*found = append(*found, site)
	}
	return nil
}

// literal is e as a composite literal, through a & if it has one.
func literal(e ast.Expr) (*ast.CompositeLit, bool) {
	if u, ok := e.(*ast.UnaryExpr); ok && u.Op == token.AND {
		e = u.X
	}
	lit, ok := e.(*ast.CompositeLit)
	return lit, ok
}

func isIdent(e ast.Expr, name string) bool {
	id, ok := e.(*ast.Ident)
	return ok && id.Name == name
}

func lowerFirst(s string) string { return strings.ToLower(s[:1]) + s[1:] }

// stringValue is the value of a string literal, or of a sum of them.
func stringValue(e ast.Expr) (string, error) {
	switch x := e.(type) {
	case *ast.BasicLit:
		if x.Kind == token.STRING {
			return strconv.Unquote(x.Value)
		}
	case *ast.BinaryExpr:
		if x.Op == token.ADD {
			a, err := stringValue(x.X)
			if err != nil {
				return "", err
			}
			b, err := stringValue(x.Y)
			return a + b, err
		}
	}
	return "", fmt.Errorf("not a string literal")
}

// stringValues is the values of []interface{}{"a", "b"}.
func stringValues(e ast.Expr) ([]string, error) {
	lit, ok := e.(*ast.CompositeLit)
	if !ok {
		return nil, fmt.Errorf("not a list literal")
	}
	out := make([]string, 0, len(lit.Elts))
	for _, v := range lit.Elts {
		s, err := stringValue(v)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// countEnums counts the Enum fields anywhere in fn.
func countEnums(fn *ast.FuncDecl) int {
	n := 0
	ast.Inspect(fn, func(node ast.Node) bool {
		if kv, ok := node.(*ast.KeyValueExpr); ok && isIdent(kv.Key, "Enum") {
			n++
		}
		return true
	})
	return n
}

func countListed(sites []enumSite) int {
	n := 0
	for _, s := range sites {
		if s.enum != nil {
			n++
		}
	}
	return n
}

// withEnums returns model, a published v3 model, with the enum values and
// descriptions of sites put back. Each site's schema must be in the model
// with the description the published documents make of the generated one
// (cut before the enum section), and without enum values: anything else
// means the two do not describe the same schema.
func withEnums(model json.RawMessage, sites []enumSite) (json.RawMessage, error) {
	for _, site := range sites {
		var err error
		model, err = editAt(model, site.path, func(o *object) error {
			var published string
			if raw, ok := o.values["description"]; ok {
				if err := json.Unmarshal(raw, &published); err != nil {
					return err
				}
			}
			want := site.description
			if i := strings.Index(want, enumHeader); i >= 0 {
				want = strings.TrimSpace(want[:i])
			}
			if published != want {
				return fmt.Errorf("the published description %q is not the generated one without its enum values, %q", published, want)
			}
			if site.description != published {
				o.set("description", mustMarshal(site.description))
			}
			if site.enum != nil {
				if _, ok := o.values["enum"]; ok {
					return fmt.Errorf("the published schema has enum values already")
				}
				o.set("enum", mustMarshal(site.enum))
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", strings.Join(site.path, "/"), err)
		}
	}
	return model, nil
}

// object is a decoded JSON object whose values stay encoded and whose keys
// keep their order, so that gen writes a published model as it was but for
// what it changes.
type object struct {
	keys   []string
	values map[string]json.RawMessage
}

func decodeObject(b json.RawMessage) (*object, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, fmt.Errorf("not a JSON object")
	}
	o := &object{values: map[string]json.RawMessage{}}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, err
		}
		k, _ := t.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		o.set(k, v)
	}
	return o, nil
}

// set sets key k to v, adding it last if it is new.
func (o *object) set(k string, v json.RawMessage) {
	if _, ok := o.values[k]; !ok {
		o.keys = append(o.keys, k)
	}
	o.values[k] = v
}

func (o *object) MarshalJSON() ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteByte('{')
	for i, k := range o.keys {
		if i > 0 {
			buf.WriteByte(',')
		}
		buf.Write(mustMarshal(k))
		buf.WriteByte(':')
		buf.Write(o.values[k])
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

// editAt calls edit on the object at path below b, an encoded object, and
// returns b with the change.
func editAt(b json.RawMessage, path []string, edit func(*object) error) (json.RawMessage, error) {
	o, err := decodeObject(b)
	if err != nil {
		return nil, err
	}
	if len(path) == 0 {
		err = edit(o)
	} else if v, ok := o.values[path[0]]; !ok {
		err = fmt.Errorf("no %s in the published model", path[0])
	} else if path[0] == "allOf" || path[0] == "anyOf" || path[0] == "oneOf" {
		err = fmt.Errorf("a junctor (%s)", path[0])
	} else {
		v, err = editAt(v, path[1:], edit)
		o.values[path[0]] = v
	}
	if err != nil {
		return nil, err
	}
	return o.MarshalJSON()
}

// mustMarshal encodes v as the published documents do, without escaping
// HTML characters.
func mustMarshal(v any) json.RawMessage {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}
