package schema

import (
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
	v := validator{}
	v.validate(obj, s.root, nil, nil, false)
	errs := v.errs
	if s.root.subtreeHasListType {
		errs = append(errs, validateListTypes(nil, s.root, obj)...)
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
	v := validator{ratchet: true}
	v.validate(obj, s.root, nil, old, old != nil)
	errs := v.errs
	if s.root.subtreeHasListType && len(validateListTypes(nil, s.root, old)) == 0 {
		errs = append(errs, validateListTypes(nil, s.root, obj)...)
	}
	if s.root.subtreeHasEmbedded {
		errs = append(errs, validateEmbedded(nil, obj, s.root)...)
	}
	return errs
}

// vpath is the path of the value being validated, kept on the stack and
// rendered only when an error is reported. Rendered as kube-openapi does:
// properties of the root without a leading dot, additionalProperties keys
// and required fields always with one (".key" at the root), indexes as
// "[i]".
type vpath struct {
	parent *vpath
	key    string
	idx    int
	kind   segKind
}

func (p *vpath) render(b *strings.Builder) {
	if p == nil {
		return
	}
	p.parent.render(b)
	switch p.kind {
	case segIndex:
		b.WriteByte('[')
		b.WriteString(strconv.Itoa(p.idx))
		b.WriteByte(']')
	case segProp:
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(p.key)
	default:
		b.WriteByte('.')
		b.WriteString(p.key)
	}
}

func (p *vpath) String() string {
	var b strings.Builder
	p.render(&b)
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
}

func (v *validator) add(e *field.Error) { v.errs = append(v.errs, e) }

// validate validates x against n and returns a match count, the measure
// kube-openapi uses to pick which failing anyOf/oneOf branch to report.
// With ratcheting, the errors found in x are dropped when x equals its
// correlated old value.
func (v *validator) validate(x any, n *node, p *vpath, old any, hasOld bool) int {
	start := len(v.errs)
	m := v.validateNode(x, n, p, old, hasOld)
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

func (v *validator) validateNode(x any, n *node, p *vpath, old any, hasOld bool) int {
	if x == nil {
		if len(n.types) > 0 && !n.nullable {
			v.typeError(p, n.typeNames, "null")
		}
		if len(n.enum) > 0 {
			v.add(field.NotSupported(fieldPath(p.String()), nil, n.enumValues))
		}
		return 0
	}
	m := 1
	kind := kindOf(x)
	if len(n.types) > 0 || n.format != "" {
		m++
		if v.checkType(x, kind, n, p) {
			m++
		}
	}
	if len(n.allOf) > 0 || len(n.anyOf) > 0 || len(n.oneOf) > 0 || n.not != nil {
		m += v.junctors(x, n, p, old, hasOld)
	}
	switch kind {
	case kindString:
		s := x.(string)
		m++
		v.checkString(s, n, p)
		if n.formatCheck != nil {
			m++
			if !n.formatCheck(s) {
				name := p.String()
				v.add(field.TypeInvalid(fieldPath(name), s, fmt.Sprintf("%s in body must be of type %s: %q", name, n.format, s)))
			}
		}
	case kindInt, kindFloat:
		m++
		v.checkNumber(x, kind, n, p)
	case kindArray:
		m++
		m += v.checkArray(x.([]any), n, p, old, hasOld)
	}
	if len(n.enum) > 0 {
		m++
		if !enumContains(n.enum, x) {
			v.add(field.NotSupported(fieldPath(p.String()), x, n.enumValues))
		}
	}
	if kind == kindObject {
		m++
		m += v.checkObject(x.(map[string]any), n, p, old, hasOld)
	}
	return m
}

// typeError reports that a value is not of the schema's type; value is
// what upstream puts in the field error (the value's type name).
func (v *validator) typeError(p *vpath, typeName, value string) {
	name := p.String()
	v.add(field.TypeInvalid(fieldPath(name), value, fmt.Sprintf("%s in body must be of type %s: %q", name, typeName, value)))
}

// checkType is kube-openapi's type validator: integral floats pass as
// integers, integers as numbers, and a string or array under a string
// format passes without a type check.
func (v *validator) checkType(x any, kind valueKind, n *node, p *vpath) bool {
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
		v.typeError(p, n.format, format)
		return false
	}
	if n.typeMask&(maskNumber|maskInteger) == 0 && n.format != "" && (kind == kindString || kind == kindArray) {
		return true
	}
	if !(contains || isFloatInt || isIntFloat) {
		v.typeError(p, n.typeNames, schType)
		return false
	}
	return true
}

// checkString reports at most one of maxLength, minLength and pattern, in
// that order, as upstream does. Lengths count runes.
func (v *validator) checkString(s string, n *node, p *vpath) {
	if n.maxLength == nil && n.minLength == nil && n.patternSrc == "" {
		return
	}
	if n.maxLength != nil || n.minLength != nil {
		l := int64(utf8.RuneCountInString(s))
		if n.maxLength != nil && l > *n.maxLength {
			v.add(field.TooLong(fieldPath(p.String()), "", int(*n.maxLength)))
			return
		}
		if n.minLength != nil && l < *n.minLength {
			name := p.String()
			v.add(field.Invalid(fieldPath(name), s, fmt.Sprintf("%s in body should be at least %d chars long", name, *n.minLength)))
			return
		}
	}
	if n.patternSrc != "" {
		if n.patternErr != nil {
			name := p.String()
			v.add(field.Invalid(fieldPath(name), s, fmt.Sprintf("%s in body should match '%s'", name, n.patternSrc+", but pattern is invalid: "+n.patternErr.Error())))
		} else if !n.pattern.MatchString(s) {
			name := p.String()
			v.add(field.Invalid(fieldPath(name), s, fmt.Sprintf("%s in body should match '%s'", name, n.patternSrc)))
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

func numberString(x any) string {
	if f, ok := x.(float64); ok {
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	if f, ok := x.(float32); ok {
		return strconv.FormatFloat(float64(f), 'f', -1, 32)
	}
	return strconv.FormatInt(toInt(x), 10)
}

// inRange is kube-openapi's IsValueValidAgainstRange: a value (or a bound)
// must fit the node's single integer/number type and format; the message
// it returns, prefixed with what was checked, becomes a pathless error.
func (n *node) inRange(x any, prefix, name string) string {
	str := numberString(x)
	var err error
	switch n.rangeType {
	case "integer":
		if n.rangeFormat == "int32" {
			_, err = strconv.ParseInt(str, 10, 32)
		} else {
			_, err = strconv.ParseInt(str, 10, 64)
		}
	default:
		if n.rangeFormat == "float" {
			_, err = strconv.ParseFloat(str, 32)
		}
	}
	if err == nil {
		return ""
	}
	if n.rangeFormat != "" {
		return fmt.Sprintf("%s value must be of type %s with format %s in %s", prefix, n.rangeType, n.rangeFormat, name)
	}
	return fmt.Sprintf("%s value must be of type %s (default format) in %s", prefix, n.rangeType, name)
}

func (v *validator) pathless(msg string) {
	v.add(field.Invalid(nil, "", msg))
}

// checkNumber is kube-openapi's number validator: range of the value,
// then multipleOf, minimum and maximum, comparing integers as integers
// when the bound fits the type and as floats otherwise.
func (v *validator) checkNumber(x any, kind valueKind, n *node, p *vpath) {
	if n.multipleOf == nil && n.maximum == nil && n.minimum == nil && n.rangeType != "integer" && n.rangeFormat != "float" {
		return
	}
	name := p.String()
	if msg := n.inRange(x, "Checked", name); msg != "" {
		v.pathless(msg)
	}
	data := toFloat(x)
	if n.multipleOf != nil {
		f := *n.multipleOf
		native := true
		if msg := n.inRange(f, "MultipleOf", name); msg != "" {
			v.pathless(msg)
			native = false
		}
		if native && kind == kindInt {
			factor := int64(f)
			if factor <= 0 {
				v.add(field.Invalid(fieldPath(name), factor, fmt.Sprintf("factor MultipleOf declared for %s must be positive: %v", name, factor)))
			} else if toInt(x)%factor != 0 {
				v.add(field.Invalid(fieldPath(name), x, fmt.Sprintf("%s in body should be a multiple of %v", name, factor)))
			}
		} else if f <= 0 {
			v.add(field.Invalid(fieldPath(name), f, fmt.Sprintf("factor MultipleOf declared for %s must be positive: %v", name, f)))
		} else {
			var mult float64
			if f < 1 {
				mult = 1 / f * data
			} else {
				mult = data / f
			}
			if !isJSONInteger(mult) {
				v.add(field.Invalid(fieldPath(name), data, fmt.Sprintf("%s in body should be a multiple of %v", name, f)))
			}
		}
	}
	if n.minimum != nil {
		v.checkBound(x, kind, n, *n.minimum, n.exclMin, false, name, data)
	}
	if n.maximum != nil {
		v.checkBound(x, kind, n, *n.maximum, n.exclMax, true, name, data)
	}
}

func (v *validator) checkBound(x any, kind valueKind, n *node, bound float64, excl, isMax bool, name string, data float64) {
	prefix := "Minimum boundary"
	if isMax {
		prefix = "Maximum boundary"
	}
	native := true
	if msg := n.inRange(bound, prefix, name); msg != "" {
		v.pathless(msg)
		native = false
	}
	var fails bool
	var shown, value any
	if native && kind == kindInt {
		i, b := toInt(x), int64(bound)
		if isMax {
			fails = i > b || (excl && i == b)
		} else {
			fails = i < b || (excl && i == b)
		}
		shown, value = b, x
	} else {
		if isMax {
			fails = data > bound || (excl && data == bound)
		} else {
			fails = data < bound || (excl && data == bound)
		}
		shown, value = bound, data
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
	v.add(field.Invalid(fieldPath(name), value, fmt.Sprintf(msg, name, shown)))
}

func (v *validator) checkArray(x []any, n *node, p *vpath, old any, hasOld bool) int {
	m := 0
	if n.items != nil {
		var corr *listCorrelation
		if hasOld && n.listType == "map" {
			if oldList, ok := old.([]any); ok {
				corr = newListCorrelation(n.listMapKeys, oldList)
			}
		}
		for i, e := range x {
			cp := vpath{parent: p, idx: i, kind: segIndex}
			var oe any
			var ok bool
			if corr != nil {
				oe, ok = corr.get(e)
			}
			m += v.validate(e, n.items, &cp, oe, ok)
		}
	}
	size := int64(len(x))
	if n.minItems != nil && size < *n.minItems {
		name := p.String()
		v.add(field.Invalid(fieldPath(name), size, fmt.Sprintf("%s in body should have at least %d items", name, *n.minItems)))
	}
	if n.maxItems != nil && size > *n.maxItems {
		v.add(field.TooMany(fieldPath(p.String()), int(size), int(*n.maxItems)))
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
				name := p.String()
				v.add(field.Invalid(fieldPath(name), "", fmt.Sprintf("%s in body shouldn't contain duplicates", name)))
				break
			}
		}
	}
	return m
}

func (v *validator) checkObject(x map[string]any, n *node, p *vpath, old any, hasOld bool) int {
	m := 0
	numKeys := int64(len(x))
	if n.minProps != nil && numKeys < *n.minProps {
		name := p.String()
		v.add(field.Invalid(fieldPath(name), numKeys, fmt.Sprintf("%s in body should have at least %d properties", name, *n.minProps)))
	}
	if n.maxProps != nil && numKeys > *n.maxProps {
		v.add(field.TooMany(fieldPath(p.String()), int(numKeys), int(*n.maxProps)))
	}
	var oldMap map[string]any
	if hasOld {
		oldMap, _ = old.(map[string]any)
	}
	if n.addlSet && !n.addlAllowed {
		for k := range x {
			if _, ok := n.props[k]; !ok {
				name := p.String()
				v.add(field.Invalid(fieldPath(name), k, fmt.Sprintf("%s.%s in body is a forbidden property", name, k)))
			}
		}
	} else if n.addl != nil {
		for k, e := range x {
			if _, ok := n.props[k]; ok {
				continue
			}
			cp := vpath{parent: p, key: k, kind: segKey}
			oe, ok := oldMap[k]
			m += v.validate(e, n.addl, &cp, oe, ok)
		}
	}
	for _, k := range n.propOrder {
		e, ok := x[k]
		if !ok {
			continue
		}
		cp := vpath{parent: p, key: k, kind: segProp}
		oe, hasOE := oldMap[k]
		if p == nil && (k == "kind" || k == "apiVersion") {
			hasOE = false
		}
		m += v.validate(e, n.props[k], &cp, oe, hasOE)
	}
	for _, k := range n.required {
		if _, ok := x[k]; !ok {
			name := p.String() + "." + k
			v.add(field.Required(fieldPath(name), ""))
		}
	}
	return m
}

// junctors validates allOf, anyOf, oneOf and not as kube-openapi does:
// branches validate the same value at the same path; a failing anyOf or
// oneOf reports the branch that matched most, plus a composite error
// without a field path.
func (v *validator) junctors(x any, n *node, p *vpath, old any, hasOld bool) int {
	m := 1
	if len(n.anyOf) > 0 {
		var best field.ErrorList
		bestM, succeeded := -1, false
		for _, b := range n.anyOf {
			errs, bm := v.branch(x, b, p, old, hasOld)
			if len(errs) == 0 {
				succeeded, best = true, nil
				m += bm
				break
			}
			if bm > bestM {
				best, bestM = errs, bm
			}
		}
		if !succeeded {
			v.pathless(fmt.Sprintf("%q must validate at least one schema (anyOf)", p.String()))
			v.errs = append(v.errs, best...)
			m += bestM
		}
	}
	if len(n.oneOf) > 0 {
		var best field.ErrorList
		bestM, validated := -1, 0
		for _, b := range n.oneOf {
			errs, bm := v.branch(x, b, p, old, hasOld)
			if len(errs) == 0 {
				validated++
				best = nil
				if validated == 1 {
					m += bm
				}
				continue
			}
			if validated == 0 && bm > bestM {
				best, bestM = errs, bm
			}
		}
		if validated != 1 {
			msg := "Found none valid"
			if validated > 1 {
				msg = fmt.Sprintf("Found %d valid alternatives", validated)
			}
			v.pathless(fmt.Sprintf("%q must validate one and only one schema (oneOf). %s", p.String(), msg))
			if validated == 0 {
				v.errs = append(v.errs, best...)
			}
		}
	}
	if len(n.allOf) > 0 {
		validated := 0
		for _, b := range n.allOf {
			errs, bm := v.branch(x, b, p, old, hasOld)
			m += bm
			if len(errs) == 0 {
				validated++
			}
			v.errs = append(v.errs, errs...)
		}
		if validated != len(n.allOf) {
			extra := ""
			if validated == 0 {
				extra = ". None validated"
			}
			v.pathless(fmt.Sprintf("%q must validate all the schemas (allOf)%s", p.String(), extra))
		}
	}
	if n.not != nil {
		if errs, _ := v.branch(x, n.not, p, old, hasOld); len(errs) == 0 {
			v.pathless(fmt.Sprintf("%q must not validate the schema (not)", p.String()))
		}
	}
	return m
}

// branch validates x against one junctor branch and returns its errors
// without keeping them. As upstream, the branch itself does not ratchet
// (its parent does), but the fields below it do.
func (v *validator) branch(x any, n *node, p *vpath, old any, hasOld bool) (field.ErrorList, int) {
	start := len(v.errs)
	m := v.validateNode(x, n, p, old, hasOld)
	if len(v.errs) == start {
		return nil, m
	}
	errs := append(field.ErrorList(nil), v.errs[start:]...)
	v.errs = v.errs[:start]
	return errs, m
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
// list with the same key values as a new element.
type listCorrelation struct {
	keys []string
	old  []any
}

func newListCorrelation(keys []string, old []any) *listCorrelation {
	return &listCorrelation{keys: keys, old: old}
}

func (c *listCorrelation) get(e any) (any, bool) {
	em, ok := e.(map[string]any)
	if !ok || len(c.keys) == 0 {
		return nil, false
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
