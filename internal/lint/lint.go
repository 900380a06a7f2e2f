// Package lint checks CustomResourceDefinition manifests offline, exactly
// as the server checks them on create (the crd package's validation:
// names, versions, structural schemas, defaults, CEL rules and their
// estimated cost), and points each problem at its file and line.
package lint

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	yamlv3 "go.yaml.in/yaml/v3"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"

	"github.com/crdserver/crdserver/internal/crd"
)

// Problem is one reason the server would refuse a manifest.
type Problem struct {
	File string
	Line int
	// Object names the CRD ("" when the document has no name).
	Object string
	// Message is what kube-apiserver answers for the field: its path and
	// the error ("spec.names.plural: Required value").
	Message string
}

func (p Problem) String() string {
	return fmt.Sprintf("%s:%d: %s", p.File, p.Line, p.Message)
}

// Paths lints files, and the .yaml, .yml and .json files below
// directories. An unreadable path is an error; documents that are not
// CRDs are skipped.
func Paths(paths []string) ([]Problem, error) {
	var out []Problem
	for _, p := range paths {
		err := filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				return nil
			}
			if path != p && !manifest(path) {
				return nil
			}
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			out = append(out, Stream(path, data)...)
			return nil
		})
		if err != nil {
			return out, err
		}
	}
	return out, nil
}

func manifest(path string) bool {
	switch filepath.Ext(path) {
	case ".yaml", ".yml", ".json":
		return true
	}
	return false
}

var crdKind = regexp.MustCompile(`(?m)^kind:\s*["']?CustomResourceDefinition["']?\s*$`)

// Stream lints every document of a YAML (or JSON) stream.
func Stream(name string, data []byte) []Problem {
	var out []Problem
	dec := yamlv3.NewDecoder(bytes.NewReader(data))
	for {
		var doc yamlv3.Node
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			return append(out, Problem{File: name, Line: yamlLine(err), Message: "not valid YAML: " + err.Error()})
		}
		if len(doc.Content) == 0 {
			continue
		}
		out = append(out, document(name, &doc)...)
	}
}

var lineRE = regexp.MustCompile(`line (\d+)`)

func yamlLine(err error) int {
	if m := lineRE.FindStringSubmatch(err.Error()); m != nil {
		n, _ := strconv.Atoi(m[1])
		return n
	}
	return 1
}

func document(name string, doc *yamlv3.Node) []Problem {
	root := doc.Content[0]
	raw, err := yamlv3.Marshal(root)
	if err != nil {
		return []Problem{{File: name, Line: root.Line, Message: err.Error()}}
	}
	if !crdKind.Match(raw) {
		return nil
	}
	var obj map[string]any
	if err := yaml.Unmarshal(raw, &obj); err != nil {
		return []Problem{{File: name, Line: root.Line, Message: err.Error()}}
	}
	av, _ := obj["apiVersion"].(string)
	version := strings.TrimPrefix(av, crd.Group+"/")
	if version != crd.Version && version != "v1beta1" {
		return []Problem{{File: name, Line: root.Line, Message: fmt.Sprintf("apiVersion %q: not a version of %s CRDs", av, crd.Group)}}
	}
	objName, _ := nested(obj, "metadata", "name").(string)
	h := crd.Hooks{Schemas: crd.StructuralChecker{}}
	// As the handler does: convert to the stored version (v1), prepare as
	// a create, and validate with the rules of the version written.
	obj, err = h.ToStorage(obj, version)
	if err != nil {
		return []Problem{{File: name, Line: root.Line, Object: objName, Message: err.Error()}}
	}
	h.PrepareForCreate(obj)
	// The server checks the name with the rest of metadata.
	errs := apivalidation.ValidateObjectMetaAccessor(&unstructured.Unstructured{Object: obj}, false, h.CreateNameValidator(obj), field.NewPath("metadata"))
	var out []Problem
	for _, e := range append(errs, h.ValidateIn(version, obj)...) {
		out = append(out, Problem{File: name, Line: lineOf(root, e.Field), Object: objName, Message: e.Error()})
	}
	return out
}

func nested(m map[string]any, keys ...string) any {
	var cur any = m
	for _, k := range keys {
		mm, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = mm[k]
	}
	return cur
}

// lineOf finds the line of a field path in the document, or of its
// nearest ancestor that is there. Upstream names a schema shared by every
// version spec.validation (its internal form); that is the first
// version's schema in a v1 manifest.
func lineOf(root *yamlv3.Node, path string) int {
	segs := segments(path)
	if len(segs) >= 2 && segs[0] == "spec" && segs[1] == "validation" && child(child(root, "spec"), "validation") == nil {
		segs = append([]string{"spec", "versions", "0", "schema"}, segs[2:]...)
	}
	line := root.Line
	n := root
	for _, s := range segs {
		n = child(n, s)
		if n == nil {
			break
		}
		line = n.Line
	}
	return line
}

// segments splits "a.b[c].d[0]" into a, b, c, d, 0.
func segments(path string) []string {
	var out []string
	for _, part := range strings.Split(path, ".") {
		for part != "" {
			i := strings.IndexByte(part, '[')
			if i < 0 {
				out = append(out, part)
				break
			}
			if i > 0 {
				out = append(out, part[:i])
			}
			j := strings.IndexByte(part[i:], ']')
			if j < 0 {
				out = append(out, part[i+1:])
				break
			}
			out = append(out, part[i+1:i+j])
			part = part[i+j+1:]
		}
	}
	return out
}

// child is the value of key in a mapping node, or the element at an index
// of a sequence node.
func child(n *yamlv3.Node, key string) *yamlv3.Node {
	if n == nil {
		return nil
	}
	switch n.Kind {
	case yamlv3.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == key {
				return n.Content[i+1]
			}
		}
	case yamlv3.SequenceNode:
		if i, err := strconv.Atoi(key); err == nil && i >= 0 && i < len(n.Content) {
			return n.Content[i]
		}
	}
	return nil
}
