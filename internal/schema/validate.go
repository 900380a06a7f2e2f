package schema

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Validate checks obj against the schema: every OpenAPI keyword, with
// upstream's (kube-openapi's) messages and field paths, then the
// uniqueness of x-kubernetes-list-type set items and map keys, then the
// apiVersion, kind and metadata of embedded resources. The object's own
// apiVersion, kind and metadata are the handler's to check.
func (s *Schema) Validate(obj map[string]any) field.ErrorList {
	var buf [16]seg
	v := validator{segs: buf[:0]}
	v.validate(obj, s.root, nil, false)
	errs := v.errs
	if s.root.subtreeHasListType {
		errs = append(errs, validateListTypes(s.root, obj)...)
	}
	if s.root.subtreeHasEmbedded {
		errs = append(errs, validateEmbedded(nil, obj, s.root)...)
	}
	return errs
}

// ValidateUpdate is Validate with upstream's ratcheting: an error in a
// value that is unchanged from old (correlated by field name, and by key
// in x-kubernetes-list-type map lists) is dropped, so an object that
// became invalid under a tightened schema can still be updated elsewhere.
// List-type errors are reported only when old had none.
func (s *Schema) ValidateUpdate(obj, old map[string]any) field.ErrorList {
	var buf [16]seg
	v := validator{ratchet: true, segs: buf[:0]}
	v.validate(obj, s.root, old, old != nil)
	errs := v.errs
	if s.root.subtreeHasListType && len(validateListTypes(s.root, old)) == 0 {
		errs = append(errs, validateListTypes(s.root, obj)...)
	}
	if s.root.subtreeHasEmbedded {
		errs = append(errs, validateEmbedded(nil, obj, s.root)...)
	}
	return errs
}

// ValidateStatusUpdate is ValidateUpdate for a write to the status
// subresource, as upstream validates one: only obj's status (when it has
// one) is checked, against the status property's schema as the
// validator's root, ratcheting against old's status. Messages therefore
// name values relative to the status ("replicas in body ...", " in body"
// for the status itself) while field paths start at "status". List types
// are checked on the whole object, and only when old had no such error;
// embedded resources are not checked.
func (s *Schema) ValidateStatusUpdate(obj, old map[string]any) field.ErrorList {
	var errs field.ErrorList
	if status, ok := obj["status"]; ok && s.root.props["status"] != nil {
		var buf [16]seg
		v := validator{ratchet: true, segs: buf[:0]}
		oldStatus, hasOld := old["status"]
		v.validate(status, s.root.props["status"], oldStatus, hasOld)
		errs = reroot(v.errs, field.NewPath("status"))
	}
	if s.root.subtreeHasListType && len(validateListTypes(s.root, old)) == 0 {
		errs = append(errs, validateListTypes(s.root, obj)...)
	}
	return errs
}

// reroot moves errors found with a value as the validator's root under p,
// as upstream joins kube-openapi's names to a field path: p itself for the
// root, else p, a dot and the name (so an index reads "p.[1]").
func reroot(errs field.ErrorList, p *field.Path) field.ErrorList {
	base := p.String()
	for _, e := range errs {
		if e.Field == "" || e.Field == (*field.Path)(nil).String() {
			e.Field = base
		} else {
			e.Field = base + "." + e.Field
		}
	}
	return errs
}

// path renders the current path as kube-openapi does: properties of the
// root without a leading dot, additionalProperties keys and required
// fields always with one (".key" at the root), indexes as "[i]". The path
// is kept as segments and rendered only when an error is reported.
func (v *validator) path() string {
	var b strings.Builder
	for _, s := range v.segs {
		switch s.kind {
		case segIndex:
			b.WriteByte('[')
			b.WriteString(strconv.Itoa(s.idx))
			b.WriteByte(']')
		case segProp:
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(s.key)
		default:
			b.WriteByte('.')
			b.WriteString(s.key)
		}
	}
	return b.String()
}

// fieldPath turns a kube-openapi path into the field.Path upstream
// reports: the leading dot dropped, the root (or ".") as a nil path.
func fieldPath(name string) *field.Path {
	if name == "" || name == "." {
		return nil
	}
	return field.NewPath(strings.TrimPrefix(name, "."))
}

type validator struct {
	errs    field.ErrorList
	ratchet bool
	segs    []seg
	// quiet is set while junctor branches are tried: errors are then
	// counted (as quietErr) but not built, since most are discarded.
	quiet bool
}

var quietErr = &field.Error{}

// quietFail records an error without building it when v is quiet, and
// reports whether it did; error sites call it before building messages.
func (v *validator) quietFail() bool {
	if v.quiet {
		v.errs = append(v.errs, quietErr)
	}
	return v.quiet
}

func (v *validator) add(e *field.Error) { v.errs = append(v.errs, e) }

// validate validates x against n and returns a match count, the measure
// kube-openapi uses to pick which failing anyOf/oneOf branch to report.
// With ratcheting, the errors found in x are dropped when x equals its
// correlated old value.
func (v *validator) validate(x any, n *node, old any, hasOld bool) int {
	if v.ratchet && hasOld && !v.quiet && equalCorrelated(x, old, n) {
		// Unchanged: ratcheting would drop whatever errors the value has,
		// so do not look for them. Most of an update is unchanged, and its
		// patterns and formats are the costly part of validation. (While
		// junctor branches are tried, v is quiet and their outcome counts,
		// so they are validated in full.)
		return 0
	}
	start := len(v.errs)
	m := v.validateNode(x, n, old, hasOld)
	if v.ratchet && hasOld && len(v.errs) > start && equalCorrelated(x, old, n) {
		v.errs = v.errs[:start]
	}
	return m
}

type valueKind uint8

const (
	kindOther valueKind = iota
	kindString
	kindBool
	kindInt
	kindFloat
	kindArray
	kindObject
)

func kindOf(x any) valueKind {
	switch x.(type) {
	case string:
		return kindString
	case bool:
		return kindBool
	case int64, int, int32:
		return kindInt
	case float64, float32:
		return kindFloat
	case []any:
		return kindArray
	case map[string]any:
		return kindObject
	}
	return kindOther
}

func (v *validator) validateNode(x any, n *node, old any, hasOld bool) int {
	if x == nil {
		if len(n.types) > 0 && !n.nullable {
			v.typeError(n.typeNames, "null")
		}
		if len(n.enum) > 0 {
			if !v.quietFail() {
				v.add(field.NotSupported(fieldPath(v.path()), nil, n.enumValues))
			}
		}
		return 0
	}
	m := 1
	kind := kindOf(x)
	if len(n.types) > 0 || n.format != "" {
		m++
		if v.checkType(x, kind, n) {
			m++
		}
	}
	if len(n.allOf) > 0 || len(n.anyOf) > 0 || len(n.oneOf) > 0 || n.not != nil {
		m += v.junctors(x, n, old, hasOld)
	}
	switch kind {
	case kindString:
		s := x.(string)
		m++
		v.checkString(s, n)
		if n.formatCheck != nil {
			m++
			if !n.formatCheck(s) {
				name := v.path()
				if !v.quietFail() {
					v.add(field.TypeInvalid(fieldPath(name), s, fmt.Sprintf("%s in body must be of type %s: %q", name, n.format, s)))
				}
			}
		}
	case kindInt, kindFloat:
		m++
		v.checkNumber(x, kind, n)
	case kindArray:
		m++
		m += v.checkArray(x.([]any), n, old, hasOld)
	}
	if len(n.enum) > 0 {
		m++
		if !enumContains(n.enum, x) {
			if !v.quietFail() {
				v.add(field.NotSupported(fieldPath(v.path()), x, n.enumValues))
			}
		}
	}
	if kind == kindObject {
		m++
		m += v.checkObject(x.(map[string]any), n, old, hasOld)
	}
	return m
}

// typeError reports that a value is not of the schema's type; value is
// what upstream puts in the field error (the value's type name).
func (v *validator) typeError(typeName, value string) {
	if v.quietFail() {
		return
	}
	name := v.path()
	v.add(field.TypeInvalid(fieldPath(name), value, fmt.Sprintf("%s in body must be of type %s: %q", name, typeName, value)))
}

// checkType is kube-openapi's type validator: integral floats pass as
// integers, integers as numbers, and a string or array under a string
// format passes without a type check.
func (v *validator) checkType(x any, kind valueKind, n *node) bool {
	var schType, format string
	var mask uint8
	switch kind {
	case kindBool:
		schType, mask = "boolean", maskBoolean
	case kindString:
		schType, mask = "string", maskString
	case kindInt:
		schType, format, mask = "integer", "int64", maskInteger
	case kindFloat:
		schType, format, mask = "number", "float64", maskNumber
	case kindArray:
		schType, mask = "array", maskArray
	case kindObject:
		schType, mask = "object", maskObject
	}
	contains := n.typeMask&mask != 0
	isFloatInt := kind == kindFloat && isJSONInteger(toFloat(x)) && n.typeMask&maskInteger != 0
	isIntFloat := kind == kindInt && n.typeMask&maskNumber != 0
	if kind != kindString && kind != kindArray && n.format != "" && !(contains || format == n.format || isFloatInt || isIntFloat) {
		v.typeError(n.format, format)
		return false
	}
	if n.typeMask&(maskNumber|maskInteger) == 0 && n.format != "" && (kind == kindString || kind == kindArray) {
		return true
	}
	if !(contains || isFloatInt || isIntFloat) {
		v.typeError(n.typeNames, schType)
		return false
	}
	return true
}

// checkString reports at most one of maxLength, minLength and pattern, in
// that order, as upstream does. Lengths count runes.
func (v *validator) checkString(s string, n *node) {
	if n.maxLength == nil && n.minLength == nil && n.patternSrc == "" {
		return
	}
	if n.maxLength != nil || n.minLength != nil {
		l := int64(utf8.RuneCountInString(s))
		if n.maxLength != nil && l > *n.maxLength {
			if !v.quietFail() {
				v.add(field.TooLong(fieldPath(v.path()), "", int(*n.maxLength)))
			}
			return
		}
		if n.minLength != nil && l < *n.minLength {
			name := v.path()
			if !v.quietFail() {
				v.add(field.Invalid(fieldPath(name), s, fmt.Sprintf("%s in body should be at least %d chars long", name, *n.minLength)))
			}
			return
		}
	}
	if n.patternSrc != "" {
		if n.patternErr != nil {
			name := v.path()
			if !v.quietFail() {
				v.add(field.Invalid(fieldPath(name), s, fmt.Sprintf("%s in body should match '%s'", name, n.patternSrc+", but pattern is invalid: "+n.patternErr.Error())))
			}
		} else if !n.pattern.MatchString(s) {
			name := v.path()
			if !v.quietFail() {
				v.add(field.Invalid(fieldPath(name), s, fmt.Sprintf("%s in body should match '%s'", name, n.patternSrc)))
			}
		}
	}
}

func toFloat(x any) float64 {
	switch x := x.(type) {
	case float64:
		return x
	case float32:
		return float64(x)
	case int64:
		return float64(x)
	case int:
		return float64(x)
	case int32:
		return float64(x)
	}
	return 0
}

func toInt(x any) int64 {
	switch x := x.(type) {
	case int64:
		return x
	case int:
		return int64(x)
	case int32:
		return int64(x)
	}
	return 0
}

// isJSONInteger is go-openapi's test for a float that JSON would call an
// integer.
func isJSONInteger(f float64) bool {
	const maxJSONFloat = float64(1<<53 - 1)
	if math.IsNaN(f) || math.IsInf(f, 0) || f < -maxJSONFloat || f > maxJSONFloat {
		return false
	}
	r := math.Round(f)
	if f == r {
		return true
	}
	if r == 0 {
		return false
	}
	return math.Abs(f-r) < 1e-9*math.Abs(r)
}

// inRange is kube-openapi's IsValueValidAgainstRange: a value (or a
// bound) must fit the node's single integer/number type and format, as
// its decimal rendering parsed with strconv would.
func (n *node) inRange(x any) bool {
	switch n.rangeType {
	case "integer":
		lo, hi := float64(math.MinInt64), float64(math.MaxInt64) // hi rounds up to 2^63, excluded below
		if n.rangeFormat == "int32" {
			lo, hi = math.MinInt32, math.MaxInt32+1
		}
		switch x := x.(type) {
		case float64:
			return x == math.Trunc(x) && x >= lo && x < hi
		default:
			i := toInt(x)
			return n.rangeFormat != "int32" || (i >= math.MinInt32 && i <= math.MaxInt32)
		}
	default:
		if n.rangeFormat == "float" {
			str := strconv.FormatFloat(toFloat(x), 'f', -1, 64)
			if _, isInt := x.(float64); !isInt {
				str = strconv.FormatInt(toInt(x), 10)
			}
			_, err := strconv.ParseFloat(str, 32)
			return err == nil
		}
	}
	return true
}

// rangeError reports a value or bound that does not fit the node's type,
// worded as upstream, as an error without a field path.
func (v *validator) rangeError(n *node, prefix string) {
	if v.quietFail() {
		return
	}
	if n.rangeFormat != "" {
		v.add(field.Invalid(nil, "", fmt.Sprintf("%s value must be of type %s with format %s in %s", prefix, n.rangeType, n.rangeFormat, v.path())))
		return
	}
	v.add(field.Invalid(nil, "", fmt.Sprintf("%s value must be of type %s (default format) in %s", prefix, n.rangeType, v.path())))
}

func (v *validator) pathless(msg string) {
	if v.quietFail() {
		return
	}
	v.add(field.Invalid(nil, "", msg))
}

// checkNumber is kube-openapi's number validator: range of the value,
// then multipleOf, minimum and maximum, comparing integers as integers
// when the bound fits the type and as floats otherwise.
func (v *validator) checkNumber(x any, kind valueKind, n *node) {
	if n.multipleOf == nil && n.maximum == nil && n.minimum == nil && n.rangeType != "integer" && n.rangeFormat != "float" {
		return
	}
	if !n.inRange(x) {
		v.rangeError(n, "Checked")
	}
	data := toFloat(x)
	if n.multipleOf != nil {
		f := *n.multipleOf
		native := n.inRange(f)
		if !native {
			v.rangeError(n, "MultipleOf")
		}
		if native && kind == kindInt {
			factor := int64(f)
			if factor <= 0 {
				v.numberError(factor, "factor MultipleOf declared for %s must be positive: %v", factor)
			} else if toInt(x)%factor != 0 {
				v.numberError(x, "%s in body should be a multiple of %v", factor)
			}
		} else if f <= 0 {
			v.numberError(f, "factor MultipleOf declared for %s must be positive: %v", f)
		} else {
			var mult float64
			if f < 1 {
				mult = 1 / f * data
			} else {
				mult = data / f
			}
			if !isJSONInteger(mult) {
				v.numberError(data, "%s in body should be a multiple of %v", f)
			}
		}
	}
	if n.minimum != nil {
		v.checkBound(x, kind, n, *n.minimum, n.exclMin, false, data)
	}
	if n.maximum != nil {
		v.checkBound(x, kind, n, *n.maximum, n.exclMax, true, data)
	}
}

// numberError reports value at the current path, msg formatted with the
// path and arg.
func (v *validator) numberError(value any, msg string, arg any) {
	if v.quietFail() {
		return
	}
	name := v.path()
	v.add(field.Invalid(fieldPath(name), value, fmt.Sprintf(msg, name, arg)))
}

func (v *validator) checkBound(x any, kind valueKind, n *node, bound float64, excl, isMax bool, data float64) {
	native := n.inRange(bound)
	if !native {
		if isMax {
			v.rangeError(n, "Maximum boundary")
		} else {
			v.rangeError(n, "Minimum boundary")
		}
	}
	intCompare := native && kind == kindInt
	var fails bool
	if intCompare {
		i, b := toInt(x), int64(bound)
		if isMax {
			fails = i > b || (excl && i == b)
		} else {
			fails = i < b || (excl && i == b)
		}
	} else if isMax {
		fails = data > bound || (excl && data == bound)
	} else {
		fails = data < bound || (excl && data == bound)
	}
	if !fails {
		return
	}
	var msg string
	switch {
	case isMax && excl:
		msg = "%s in body should be less than %v"
	case isMax:
		msg = "%s in body should be less than or equal to %v"
	case excl:
		msg = "%s in body should be greater than %v"
	default:
		msg = "%s in body should be greater than or equal to %v"
	}
	if intCompare {
		v.numberError(x, msg, int64(bound))
	} else {
		v.numberError(data, msg, bound)
	}
}

func (v *validator) checkArray(x []any, n *node, old any, hasOld bool) int {
	m := 0
	if n.items != nil {
		var corr *listCorrelation
		if hasOld && n.listType == "map" {
			if oldList, ok := old.([]any); ok {
				corr = newListCorrelation(n.listMapKeys, oldList)
			}
		}
		for i, e := range x {
			v.segs = append(v.segs, seg{kind: segIndex, idx: i})
			var oe any
			var ok bool
			if corr != nil {
				oe, ok = corr.get(e)
			}
			m += v.validate(e, n.items, oe, ok)
			v.segs = v.segs[:len(v.segs)-1]
		}
	}
	size := int64(len(x))
	if n.minItems != nil && size < *n.minItems {
		name := v.path()
		if !v.quietFail() {
			v.add(field.Invalid(fieldPath(name), size, fmt.Sprintf("%s in body should have at least %d items", name, *n.minItems)))
		}
	}
	if n.maxItems != nil && size > *n.maxItems {
		if !v.quietFail() {
			v.add(field.TooMany(fieldPath(v.path()), int(size), int(*n.maxItems)))
		}
	}
	if n.uniqueItems {
		for i := 1; i < len(x); i++ {
			dup := false
			for j := 0; j < i; j++ {
				if reflect.DeepEqual(x[i], x[j]) {
					dup = true
					break
				}
			}
			if dup {
				name := v.path()
				if !v.quietFail() {
					v.add(field.Invalid(fieldPath(name), "", fmt.Sprintf("%s in body shouldn't contain duplicates", name)))
				}
				break
			}
		}
	}
	return m
}

func (v *validator) checkObject(x map[string]any, n *node, old any, hasOld bool) int {
	m := 0
	numKeys := int64(len(x))
	if n.minProps != nil && numKeys < *n.minProps {
		name := v.path()
		if !v.quietFail() {
			v.add(field.Invalid(fieldPath(name), numKeys, fmt.Sprintf("%s in body should have at least %d properties", name, *n.minProps)))
		}
	}
	if n.maxProps != nil && numKeys > *n.maxProps {
		if !v.quietFail() {
			v.add(field.TooMany(fieldPath(v.path()), int(numKeys), int(*n.maxProps)))
		}
	}
	var oldMap map[string]any
	if hasOld {
		oldMap, _ = old.(map[string]any)
	}
	if n.addlSet && !n.addlAllowed {
		for k := range x {
			if _, ok := n.props[k]; !ok {
				name := v.path()
				if !v.quietFail() {
					v.add(field.Invalid(fieldPath(name), k, fmt.Sprintf("%s.%s in body is a forbidden property", name, k)))
				}
			}
		}
	} else if n.addl != nil {
		for k, e := range x {
			if _, ok := n.props[k]; ok {
				continue
			}
			v.segs = append(v.segs, seg{kind: segKey, key: k})
			oe, ok := oldMap[k]
			m += v.validate(e, n.addl, oe, ok)
			v.segs = v.segs[:len(v.segs)-1]
		}
	}
	for _, k := range n.propOrder {
		e, ok := x[k]
		if !ok {
			continue
		}
		oe, hasOE := oldMap[k]
		if len(v.segs) == 0 && (k == "kind" || k == "apiVersion") {
			hasOE = false
		}
		v.segs = append(v.segs, seg{kind: segProp, key: k})
		m += v.validate(e, n.props[k], oe, hasOE)
		v.segs = v.segs[:len(v.segs)-1]
	}
	for _, k := range n.required {
		if _, ok := x[k]; !ok {
			name := v.path() + "." + k
			if !v.quietFail() {
				v.add(field.Required(fieldPath(name), ""))
			}
		}
	}
	return m
}

// junctors validates allOf, anyOf, oneOf and not as kube-openapi does:
// branches validate the same value at the same path; a failing anyOf or
// oneOf reports the branch that matched most, plus a composite error
// without a field path. Branches are first tried quietly, and errors are
// built only for the branches that end up reported.
func (v *validator) junctors(x any, n *node, old any, hasOld bool) int {
	m := 1
	if len(n.anyOf) > 0 {
		best, bestM, succeeded := -1, -1, false
		for i, b := range n.anyOf {
			ok, bm := v.try(x, b, old, hasOld)
			if ok {
				succeeded = true
				m += bm
				break
			}
			if bm > bestM {
				best, bestM = i, bm
			}
		}
		if !succeeded {
			v.pathless(fmt.Sprintf("%q must validate at least one schema (anyOf)", v.path()))
			v.report(x, n.anyOf[best], old, hasOld)
			m += bestM
		}
	}
	if len(n.oneOf) > 0 {
		best, bestM, validated := -1, -1, 0
		for i, b := range n.oneOf {
			ok, bm := v.try(x, b, old, hasOld)
			if ok {
				validated++
				if validated == 1 {
					m += bm
				}
				continue
			}
			if validated == 0 && bm > bestM {
				best, bestM = i, bm
			}
		}
		if validated != 1 {
			msg := "Found none valid"
			if validated > 1 {
				msg = fmt.Sprintf("Found %d valid alternatives", validated)
			}
			v.pathless(fmt.Sprintf("%q must validate one and only one schema (oneOf). %s", v.path(), msg))
			if validated == 0 {
				v.report(x, n.oneOf[best], old, hasOld)
			}
		}
	}
	if len(n.allOf) > 0 {
		validated := 0
		for _, b := range n.allOf {
			ok, bm := v.try(x, b, old, hasOld)
			m += bm
			if ok {
				validated++
			}
		}
		if validated != len(n.allOf) {
			for _, b := range n.allOf {
				v.report(x, b, old, hasOld)
			}
			extra := ""
			if validated == 0 {
				extra = ". None validated"
			}
			v.pathless(fmt.Sprintf("%q must validate all the schemas (allOf)%s", v.path(), extra))
		}
	}
	if n.not != nil {
		if ok, _ := v.try(x, n.not, old, hasOld); ok {
			v.pathless(fmt.Sprintf("%q must not validate the schema (not)", v.path()))
		}
	}
	return m
}

// try validates x against one junctor branch quietly and reports whether
// it passed. As upstream, the branch itself does not ratchet (its parent
// does), but the fields below it do.
func (v *validator) try(x any, n *node, old any, hasOld bool) (bool, int) {
	start, quiet := len(v.errs), v.quiet
	v.quiet = true
	m := v.validateNode(x, n, old, hasOld)
	ok := len(v.errs) == start
	v.errs = v.errs[:start]
	v.quiet = quiet
	return ok, m
}

// report validates x against a branch again, keeping its errors.
func (v *validator) report(x any, n *node, old any, hasOld bool) {
	if v.quiet {
		v.quietFail()
		return
	}
	v.validateNode(x, n, old, hasOld)
}

// enumContains is kube-openapi's enum test: a value matches an enum value
// when Go can convert it to the enum value's type and the results are
// deeply equal (so 1.0 matches 1, as upstream).
func enumContains(enum []any, x any) bool {
	xv := reflect.ValueOf(x)
	for _, e := range enum {
		if e == nil {
			continue
		}
		switch e := e.(type) {
		case string:
			if s, ok := x.(string); ok && s == e {
				return true
			}
			continue
		case bool:
			if b, ok := x.(bool); ok && b == e {
				return true
			}
			continue
		case int64:
			switch x := x.(type) {
			case int64:
				if x == e {
					return true
				}
				continue
			case float64:
				if int64(x) == e {
					return true
				}
				continue
			}
		case float64:
			switch x := x.(type) {
			case int64:
				if float64(x) == e {
					return true
				}
				continue
			case float64:
				if x == e {
					return true
				}
				continue
			}
		}
		et := reflect.TypeOf(e)
		if xv.Type().ConvertibleTo(et) && reflect.DeepEqual(xv.Convert(et).Interface(), e) {
			return true
		}
	}
	return false
}

// equalCorrelated is upstream's ratcheting equality (CorrelatedObject's
// CachedDeepEqual): objects are equal when every field is known to the
// schema and equal, map lists when every element correlates by key to an
// equal old element (in any order), other lists when deeply equal.
func equalCorrelated(x, old any, n *node) bool {
	if x == nil || old == nil {
		return x == nil && old == nil
	}
	switch xv := x.(type) {
	case []any:
		ov, ok := old.([]any)
		if !ok || len(ov) != len(xv) {
			return false
		}
		if n.items == nil || n.listType != "map" {
			return equalJSON(xv, ov)
		}
		corr := newListCorrelation(n.listMapKeys, ov)
		for _, e := range xv {
			oe, ok := corr.get(e)
			if !ok || !equalCorrelated(e, oe, n.items) {
				return false
			}
		}
		return true
	case map[string]any:
		om, ok := old.(map[string]any)
		if !ok || len(om) != len(xv) {
			return false
		}
		for k, e := range xv {
			oe, ok := om[k]
			if !ok {
				return false
			}
			c, ok := n.child(k)
			if !ok || !equalCorrelated(e, oe, c) {
				return false
			}
		}
		return true
	}
	return equalJSON(x, old)
}

// equalJSON is deep equality of decoded JSON values.
func equalJSON(a, b any) bool {
	switch a := a.(type) {
	case map[string]any:
		bm, ok := b.(map[string]any)
		if !ok || len(a) != len(bm) {
			return false
		}
		for k, av := range a {
			bv, ok := bm[k]
			if !ok || !equalJSON(av, bv) {
				return false
			}
		}
		return true
	case []any:
		bl, ok := b.([]any)
		if !ok || len(a) != len(bl) {
			return false
		}
		for i := range a {
			if !equalJSON(a[i], bl[i]) {
				return false
			}
		}
		return true
	case string:
		bs, ok := b.(string)
		return ok && a == bs
	case bool:
		bb, ok := b.(bool)
		return ok && a == bb
	case int64:
		bi, ok := b.(int64)
		return ok && a == bi
	case float64:
		bf, ok := b.(float64)
		return ok && a == bf
	case nil:
		return b == nil
	}
	return reflect.DeepEqual(a, b)
}

// listCorrelation finds the old element of an x-kubernetes-list-type map
// list with the same key values as a new element. Long lists are indexed
// by their keys' JSON so that correlating a list stays linear.
type listCorrelation struct {
	keys  []string
	old   []any
	index map[string]any
}

func newListCorrelation(keys []string, old []any) *listCorrelation {
	c := &listCorrelation{keys: keys, old: old}
	if len(old) > 8 && len(keys) > 0 {
		c.index = make(map[string]any, len(old))
		for _, o := range old {
			if om, ok := o.(map[string]any); ok {
				if k, ok := c.key(om); ok {
					if _, dup := c.index[k]; !dup {
						c.index[k] = o
					}
				}
			}
		}
	}
	return c
}

// key renders an element's key values; ok is false when they cannot be
// rendered.
func (c *listCorrelation) key(m map[string]any) (string, bool) {
	vals := make([]any, len(c.keys))
	for i, k := range c.keys {
		v, ok := m[k]
		if !ok {
			v = unspecifiedKey{}
		}
		vals[i] = v
	}
	b, err := json.Marshal(vals)
	return string(b), err == nil
}

func (c *listCorrelation) get(e any) (any, bool) {
	em, ok := e.(map[string]any)
	if !ok || len(c.keys) == 0 {
		return nil, false
	}
	if c.index != nil {
		k, ok := c.key(em)
		if !ok {
			return nil, false
		}
		o, ok := c.index[k]
		return o, ok
	}
	for _, o := range c.old {
		om, ok := o.(map[string]any)
		if !ok {
			continue
		}
		match := true
		for _, k := range c.keys {
			ev, eok := em[k]
			ov, ook := om[k]
			if eok != ook || !equalJSON(ev, ov) {
				match = false
				break
			}
		}
		if match {
			return o, true
		}
	}
	return nil, false
}
