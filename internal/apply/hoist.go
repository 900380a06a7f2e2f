package apply

import (
	"strconv"

	smdschema "sigs.k8s.io/structured-merge-diff/v6/schema"
)

// hoistInline gives every inlined map and list type of types a name of
// its own, and refers to it by that name. The types mean the same; what
// changes is the cost of comparing them: structured-merge-diff's
// comparison checks at every node of an object whether its two sides
// deduce the same type, and two inlined types are equal only if their
// whole subtrees are, while two named ones are equal by name. A CRD's
// schema converts to one named type with everything below it inlined, so
// without this an update's comparison walked the schema once per level of
// the object.
func hoistInline(types []smdschema.TypeDef) []smdschema.TypeDef {
	h := &hoister{out: types}
	for i := range len(types) {
		h.atom(&h.out[i].Atom)
	}
	return h.out
}

type hoister struct {
	out []smdschema.TypeDef
}

// hoistedPrefix starts the names of hoisted types; OpenAPI model names
// (reverse domain names) never start with a double underscore.
const hoistedPrefix = "__crdserver_inline_"

func (h *hoister) atom(a *smdschema.Atom) {
	switch {
	case a.Map != nil:
		// The schema's maps may be shared: change a new one (its lookup
		// index is built on first use).
		m := &smdschema.Map{
			Fields:              append([]smdschema.StructField(nil), a.Map.Fields...),
			Unions:              a.Map.Unions,
			ElementType:         a.Map.ElementType,
			ElementRelationship: a.Map.ElementRelationship,
		}
		for i := range m.Fields {
			h.ref(&m.Fields[i].Type)
		}
		h.ref(&m.ElementType)
		a.Map = m
	case a.List != nil:
		l := *a.List
		h.ref(&l.ElementType)
		a.List = &l
	}
}

func (h *hoister) ref(tr *smdschema.TypeRef) {
	if tr.NamedType != nil || (tr.Inlined.Map == nil && tr.Inlined.List == nil) {
		return
	}
	inner := tr.Inlined
	h.atom(&inner)
	name := hoistedPrefix + strconv.Itoa(len(h.out))
	h.out = append(h.out, smdschema.TypeDef{Name: name, Atom: inner})
	*tr = smdschema.TypeRef{NamedType: &name, ElementRelationship: tr.ElementRelationship, Nullable: tr.Nullable}
}
