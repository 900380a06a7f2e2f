package cel

import (
	"context"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/cel/common"
)

// ValidateDefault runs the rules of props, and of every schema below it,
// on value: the default props declares, checked when a CRD is written.
// Errors are reported under p, the default's path, and nothing ratchets.
// As upstream, the value is checked twice: first as an update that keeps
// it (oldSelf is the value, so transition rules hold), then, when that
// found nothing, as a create (no oldSelf), which rules with
// optionalOldSelf must also pass. resourceRoot: values of props are
// resources (the CRD's root, or x-kubernetes-embedded-resource), whose
// rules also see apiVersion, kind and metadata.
func ValidateDefault(ctx context.Context, props *apiextensionsv1.JSONSchemaProps, resourceRoot bool, value any, p *field.Path) field.ErrorList {
	if props == nil || !hasRules(props) {
		return nil
	}
	n := newNode(props)
	if resourceRoot && n.withMeta == nil {
		n.withMeta = n.typeAndObjectMeta()
	}
	b := &builder{programs: map[string]programs{}}
	v := b.build(props, n, resourceRoot, common.SchemaDeclType(n, resourceRoot))
	st := &state{ctx: ctx, budget: RuntimeBudget}
	if !v.validate(st, p, value, value, ratchet{}) || len(st.errs) > 0 {
		return st.errs
	}
	v.validate(st, p, value, nil, ratchet{})
	return st.errs
}
