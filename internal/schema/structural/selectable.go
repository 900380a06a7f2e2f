package structural

import (
	"bufio"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// MaxSelectableFields is how many selectable fields a version may declare.
const MaxSelectableFields = 8

// CheckSelectableFields validates the selectableFields of one version (p
// is their path) against the version's schema s: each jsonPath must name
// a string, boolean or integer field outside metadata, once. allowTooMany
// keeps an over-long list that is stored unchanged (see
// TooManySelectableFieldsAllowed).
//
// A schema using a keyword the structural model cannot represent is not
// resolved against; the schema check reports it.
func CheckSelectableFields(fields []apiextensionsv1.SelectableField, s *apiextensionsv1.JSONSchemaProps, p *field.Path, allowTooMany bool) field.ErrorList {
	if s == nil || unsupported(s, 0) != "" {
		return nil
	}
	var errs field.ErrorList
	seen := map[string]bool{}
	for i, f := range fields {
		jp := p.Index(i).Child("jsonPath")
		if f.JSONPath == "" {
			errs = append(errs, field.Required(jp, ""))
			continue
		}
		path, found, err := FieldPath(f.JSONPath, s, false)
		if err != nil {
			errs = append(errs, field.Invalid(jp, f.JSONPath, fmt.Sprintf("is an invalid path: %v", err)))
			continue
		}
		if path.Root().String() == "metadata" {
			errs = append(errs, field.Invalid(jp, f.JSONPath, "must not point to fields in metadata"))
		}
		if found == nil || (found.Type != "string" && found.Type != "boolean" && found.Type != "integer") {
			errs = append(errs, field.Invalid(jp, f.JSONPath, "must point to a field of type string, boolean or integer. Enum string fields and strings with formats are allowed."))
		}
		if key := path.String(); seen[key] {
			errs = append(errs, field.Duplicate(jp, f.JSONPath))
		} else {
			seen[key] = true
		}
	}
	if len(seen) > MaxSelectableFields && !allowTooMany {
		errs = append(errs, field.TooMany(p, len(seen), MaxSelectableFields))
	}
	return errs
}

// TooManySelectableFieldsAllowed reports whether fields, the selectable
// fields of version ("" when every version shares them), may exceed
// MaxSelectableFields: the stored spec old already did, with the same
// list.
func TooManySelectableFieldsAllowed(fields []apiextensionsv1.SelectableField, version string, old *apiextensionsv1.CustomResourceDefinitionSpec) bool {
	if old == nil || len(old.Versions) == 0 {
		return false
	}
	var oldFields []apiextensionsv1.SelectableField
	found := false
	for i, v := range old.Versions {
		switch {
		case version == "" && i == 0:
			oldFields, found = v.SelectableFields, true
		case version == "" && !reflect.DeepEqual(v.SelectableFields, oldFields):
			return false // the stored versions did not share one list
		case v.Name == version:
			oldFields, found = v.SelectableFields, true
		}
	}
	return found && len(oldFields) > MaxSelectableFields && reflect.DeepEqual(fields, oldFields)
}

// ErrInvalidField is returned by FieldPath when a path names no field of
// the schema.
var ErrInvalidField = errors.New("does not refer to a valid field")

var escapes = regexp.MustCompile(`\\.`)

// FieldPath resolves a JSON path in the dot notation (.spec.name, and with
// arrayNotation also .spec['a.b']) against s, returning the field path it
// names and the schema found there (nil below additionalProperties: true).
// Errors read as upstream's, for use after "is an invalid path: ".
func FieldPath(jsonPath string, s *apiextensionsv1.JSONSchemaProps, arrayNotation bool) (*field.Path, *apiextensionsv1.JSONSchemaProps, error) {
	var path *field.Path
	step := func(name string) error {
		switch {
		case s == nil:
			return ErrInvalidField
		case s.Properties != nil:
			v, ok := s.Properties[name]
			if !ok {
				return ErrInvalidField
			}
			path, s = path.Child(name), &v
		case s.AdditionalProperties != nil:
			path, s = path.Key(name), s.AdditionalProperties.Schema
		default:
			return ErrInvalidField
		}
		return nil
	}

	sc := bufio.NewScanner(strings.NewReader(jsonPath))
	sc.Buffer(nil, len(jsonPath)+1)
	sc.Split(splitPath)
	for sc.Scan() {
		switch tok := sc.Text(); tok {
		case "[":
			if !arrayNotation {
				return nil, nil, errors.New("array notation is not allowed")
			}
			if !sc.Scan() {
				return nil, nil, errors.New("unexpected end of JSON path")
			}
			tok = sc.Text()
			if len(tok) < 2 || tok[0] != '\'' || tok[len(tok)-1] != '\'' {
				return nil, nil, fmt.Errorf("expected single quoted string but got %s", tok)
			}
			name, err := unescape(tok[1 : len(tok)-1])
			if err != nil {
				return nil, nil, fmt.Errorf("invalid string literal: %w", err)
			}
			if err := step(name); err != nil {
				return nil, nil, err
			}
			if !sc.Scan() {
				return nil, nil, errors.New("unexpected end of JSON path")
			}
			if tok = sc.Text(); tok != "]" {
				return nil, nil, fmt.Errorf("expected ] but got %s", tok)
			}
		case ".":
			if !sc.Scan() {
				return nil, nil, errors.New("unexpected end of JSON path")
			}
			if err := step(sc.Text()); err != nil {
				return nil, nil, err
			}
		default:
			return nil, nil, fmt.Errorf("expected [ or . but got: %s", tok)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, nil, err
	}
	return path, s, nil
}

// splitPath yields '.', '[' and ']' as tokens of their own, single-quoted
// strings whole, and the text between delimiters.
func splitPath(data []byte, atEOF bool) (int, []byte, error) {
	for i := 0; i < len(data); i++ {
		if data[0] == '\'' {
			if i > 0 && data[i] == '\'' && data[i-1] != '\\' {
				return i + 1, data[:i+1], nil
			}
			continue
		}
		switch data[i] {
		case '.', '[', ']':
			if i == 0 {
				return 1, data[:1], nil
			}
			return i, data[:i], nil
		}
	}
	if atEOF && len(data) > 0 {
		return len(data), data, nil
	}
	return 0, nil, nil
}

// unescape resolves the backslash escapes of a single-quoted name.
func unescape(s string) (string, error) {
	var err error
	out := escapes.ReplaceAllStringFunc(s, func(m string) string {
		switch m[1] {
		case 'a':
			return "\a"
		case 'b':
			return "\b"
		case 'f':
			return "\f"
		case 'n':
			return "\n"
		case 'r':
			return "\r"
		case 't':
			return "\t"
		case 'v':
			return "\v"
		case '\'':
			return "'"
		case '\\':
			return "\\"
		}
		err = fmt.Errorf("invalid escape char %s", m)
		return ""
	})
	return out, err
}
