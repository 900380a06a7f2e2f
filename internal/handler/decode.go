package handler

// Request decoding: a write's body becomes the object the verb works on,
// as upstream's decoders make it — the request's kind and version checked
// or filled in, a built-in's Go type applied, fieldValidation's problems
// refused or warned about.

import (
	"encoding/hex"
	"errors"
	"fmt"
	"mime"
	"reflect"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"

	"github.com/crdserver/crdserver/internal/codec"
	"github.com/crdserver/crdserver/internal/registry"
	crschema "github.com/crdserver/crdserver/internal/schema"
)

// typedHooks is the value whose type checks apply to request bodies in the
// request's version: the definition's Hooks, or a version's own for a
// built-in whose versions have different Go types.
func typedHooks(c *call) any { return hooksIn(c.def, c.version.Name) }

// hooksIn is typedHooks for def's version.
func hooksIn(def *registry.Definition, version string) any {
	if vt, ok := def.Hooks.(registry.VersionTyped); ok {
		return vt.TypedIn(version)
	}
	return def.Hooks
}

// readBody reads the request body; the MaxBodySize filter bounds it.
func readBody(c *call) ([]byte, error) {
	b, err := codec.ReadAll(c.r.Body, c.r.ContentLength)
	if err != nil {
		if strings.Contains(err.Error(), "too large") {
			return nil, apierrors.NewRequestEntityTooLargeError(fmt.Sprintf("limit is %d", maxBody))
		}
		return nil, apierrors.NewBadRequest(fmt.Sprintf("reading request body: %v", err))
	}
	return b, nil
}

const maxBody = 3 * 1024 * 1024

// fieldValidation reads the fieldValidation parameter: Strict, Warn (the
// default) or Ignore. Writes validate it first (checkWriteOptions), which
// words a bad value as upstream does; the error here is a safety net.
func fieldValidation(c *call) (string, error) {
	v := c.r.URL.Query().Get("fieldValidation")
	switch v {
	case "":
		return "Warn", nil
	case "Strict", "Warn", "Ignore":
		return v, nil
	}
	return "", apierrors.NewBadRequest(fmt.Sprintf("fieldValidation must be one of \"Ignore\", \"Warn\", or \"Strict\", got %q", v))
}

// decodeBody decodes the request object as upstream's decoder does and
// applies fieldValidation to the problems decoding finds: duplicate
// fields, fields a built-in's Go type does not have, and fields the
// version's schema prunes. A body that does not decode, or a custom
// resource without kind or apiVersion, is upstream's 400.
func decodeBody(c *call) (map[string]any, error) {
	return decodeBodyWith(c, codec.DecodeOptions{})
}

// decodeBodyWith is decodeBody with the decoder's options: a replacement
// keeps its managedFields encoded (see keepSentManagedFields).
func decodeBodyWith(c *call, opts codec.DecodeOptions) (map[string]any, error) {
	mode, err := fieldValidation(c)
	if err != nil {
		return nil, err
	}
	body, err := readBody(c)
	if err != nil {
		return nil, err
	}
	ct := c.r.Header.Get("Content-Type")
	if isProtobuf(ct) {
		if obj, err := decodeProtobuf(typedHooks(c), body); obj != nil || err != nil {
			return obj, err
		}
	}
	if sm, ok := typedHooks(c).(registry.StrategicMerger); ok {
		// A key given twice adds to what the first set, as upstream's
		// typed decoding has it.
		opts.GoType = reflect.TypeOf(sm.PatchSchema())
	}
	obj, problems, err := codec.Decode(body, ct, opts)
	if err != nil {
		var de *codec.DecodeError
		if errors.As(err, &de) {
			return nil, de.ForKind(c.def.Kind)
		}
		return nil, err
	}
	if err := checkCustomTypeMeta(c, obj, body, ct, mode); err != nil {
		return nil, err
	}
	typeChecked := false
	if sd, ok := typedHooks(c).(registry.StrictDecoder); ok && mode != "Ignore" && isJSON(ct) {
		// Upstream's typed decoder lists unknown and duplicate fields
		// together, in the body's order.
		problems, typeChecked = sd.StrictErrors(body)
	}
	if err := checkTyped(c, obj, ct, mode, problems, typeChecked); err != nil {
		return nil, err
	}
	if err := checkAPIVersion(c, obj); err != nil {
		return nil, err
	}
	return obj, nil
}

// goTyped reports whether a resource has a Go type (the built-ins; they
// take strategic merge patches). Upstream decodes those into their type,
// which fills a missing kind and apiVersion from the URL; custom resources
// decode as unstructured objects, which must name their kind.
func goTyped(def *registry.Definition) bool {
	_, ok := def.Hooks.(registry.StrategicMerger)
	return ok
}

// checkCustomTypeMeta refuses a custom resource body without kind as
// upstream does: its unstructured decoder fails; the message depends on
// fieldValidation, since only the strict decoder reports the kind it found
// (none) rather than the URL's. (A body without apiVersion decodes, and is
// refused once decoding has reported its unknown fields: see
// checkAPIVersion.)
func checkCustomTypeMeta(c *call, obj map[string]any, body []byte, ct, mode string) error {
	if goTyped(c.def) {
		return nil
	}
	av, _ := obj["apiVersion"].(string)
	if kind, _ := obj["kind"].(string); kind == "" {
		if mode != "Ignore" {
			return apierrors.NewBadRequest(fmt.Sprintf("the object provided is unrecognized (must be of type %s): %v (%s)",
				c.def.Kind, runtime.NewMissingKindErr(string(body)), summarize(body)))
		}
		// The lenient decoder names the URL's kind and the version of the
		// body's apiVersion (the URL's when it has none), and quotes the
		// body as JSON.
		version := claimedVersion(c, obj)
		data := body
		if mt, _, _ := mime.ParseMediaType(ct); mt == codec.MediaYAML {
			if j, err := yaml.YAMLToJSON(body); err == nil {
				data = j
			}
		}
		return apierrors.NewBadRequest(fmt.Sprintf("%s in version %q cannot be handled as a %s: %v",
			c.def.Kind, version, c.def.Kind, runtime.NewMissingKindErr(string(data))))
	}
	if _, err := schema.ParseGroupVersion(av); err != nil {
		return apierrors.NewBadRequest(fmt.Sprintf("the object provided is unrecognized (must be of type %s): %v (%s)", c.def.Kind, err, summarize(body)))
	}
	if err := metaTypeError(obj); err != nil {
		return decodeError(c, obj, err)
	}
	dropEmptyMetadata(obj)
	return nil
}

// checkAPIVersion refuses a custom resource body without apiVersion, as
// upstream does after decoding it: its group and version are empty and do
// not match the URL's.
func checkAPIVersion(c *call, obj map[string]any) error {
	if av, _ := obj["apiVersion"].(string); av == "" && !goTyped(c.def) {
		return apierrors.NewBadRequest(fmt.Sprintf("the API version in the data () does not match the expected API version (%s)", c.apiVersion()))
	}
	return nil
}

// decodeError is upstream's 400 for a body its decoder refuses with err:
// it names the kind and version the body claims, and the kind it was to
// be decoded as — a built-in's own, or a custom resource body's kind,
// read from the body, which fails first when the body has no version.
func decodeError(c *call, obj map[string]any, err error) error {
	kind, _ := obj["kind"].(string)
	if kind == "" {
		kind = c.def.Kind
	}
	as := c.def.Kind
	if !goTyped(c.def) {
		av, _ := obj["apiVersion"].(string)
		if gv, _ := schema.ParseGroupVersion(av); gv.Version == "" {
			return apierrors.NewBadRequest(runtime.NewMissingVersionErr("object has no apiVersion field").Error())
		}
		as = kind
	}
	return apierrors.NewBadRequest(fmt.Sprintf("%s in version %q cannot be handled as a %s: %v", kind, claimedVersion(c, obj), as, err))
}

// checkTyped applies a built-in's Go type to a decoded body: wrongly typed
// fields are refused, unknown ones join the decoder's problems for
// fieldValidation, and so do the fields the version's schema prunes
// (when the body is of the URL's version and kind; anything else is
// refused after decoding). typeChecked skips the Go type's check of a
// body its strict decoding found of the right types.
func checkTyped(c *call, obj map[string]any, ct, mode string, problems []string, typeChecked bool) error {
	if tc, ok := typedHooks(c).(registry.TypeChecker); ok && !typeChecked {
		if err := tc.CheckType(obj); err != nil {
			return apierrors.NewBadRequest(err.Error())
		}
	}
	_, listed := typedHooks(c).(registry.StrictDecoder)
	if uf, ok := typedHooks(c).(registry.UnknownFielder); ok && mode != "Ignore" && !(listed && isJSON(ct)) {
		problems = append(problems, uf.UnknownFields(obj)...)
	}
	if s := bodySchema(c, obj); s != nil {
		for _, p := range s.Prune(obj) {
			problems = append(problems, unknownField(p))
		}
		c.bodyPruned = true
	}
	if mode == "Strict" && len(problems) > 0 {
		return decodeError(c, obj, errors.New("strict decoding error: "+strings.Join(problems, ", ")))
	}
	return applyFieldValidation(c, mode, problems)
}

// isJSON reports whether a request body of type ct is JSON (the default).
func isJSON(ct string) bool {
	mt, _, _ := mime.ParseMediaType(ct)
	return mt == "" || mt == codec.MediaJSON
}

// claimedVersion is the version of the body's apiVersion, or the URL's
// when the body names none: the version upstream's decoder words its
// errors with.
func claimedVersion(c *call, obj map[string]any) string {
	av, _ := obj["apiVersion"].(string)
	if gv, err := schema.ParseGroupVersion(av); err == nil && gv.Version != "" {
		return gv.Version
	}
	return c.version.Name
}

// bodySchema is the schema that prunes a request body as it decodes: the
// version's, for a body of the URL's version and kind. A custom resource
// body of another version of the same kind (refused after decoding) is
// pruned as upstream's decoder prunes it, by the schema of the version it
// names — all but apiVersion, kind and metadata when there is no such
// version — and one of another kind has its metadata pruned only.
func bodySchema(c *call, obj map[string]any) registry.Schema {
	if goTyped(c.def) {
		if isRequestKind(c, obj) {
			return versionSchema(c)
		}
		return nil
	}
	av, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)
	gv, err := schema.ParseGroupVersion(av)
	switch {
	case err != nil:
		return nil
	case gv.Group != c.def.Group || kind != c.def.Kind:
		return metadataSchema // a body without apiVersion too
	}
	v := c.def.Version(gv.Version)
	if v == nil {
		return unspecifiedSchema
	}
	if s, ok := v.Schema.(registry.Schema); ok {
		return s
	}
	return metadataSchema
}

// The schemas of bodies that no version's schema prunes: unspecifiedSchema
// prunes all but apiVersion, kind and metadata, and the metadata;
// metadataSchema prunes the metadata only.
var (
	unspecifiedSchema = func() *crschema.Schema {
		s, err := crschema.Compile(nil)
		if err != nil {
			panic(err) // a nil schema has nothing that can fail to compile
		}
		return s
	}()
	metadataSchema = unspecifiedSchema.PreservingUnknownFields()
)

// isRequestKind reports whether obj claims the request's apiVersion and
// kind (or leaves them to the URL).
func isRequestKind(c *call, obj map[string]any) bool {
	av, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)
	return (av == "" || av == c.apiVersion()) && (kind == "" || kind == c.def.Kind)
}

func applyFieldValidation(c *call, mode string, problems []string) error {
	if len(problems) == 0 || mode == "Ignore" {
		return nil
	}
	if mode == "Strict" {
		return apierrors.NewBadRequest("strict decoding error: " + strings.Join(problems, ", "))
	}
	for _, w := range codec.Warnings(problems) {
		addWarning(c, w)
	}
	return nil
}

// checkTypeMeta fills a missing apiVersion/kind from the URL and refuses a
// body of another kind.
func checkTypeMeta(c *call, obj map[string]any) error {
	av, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)
	if goTyped(c.def) && av != "" && kind != "" && (av != c.apiVersion() || kind != c.def.Kind) {
		return typedDecodeError(c, av, kind, obj)
	}
	if av == "" {
		obj["apiVersion"] = c.apiVersion()
	} else if av != c.apiVersion() {
		return apierrors.NewBadRequest(fmt.Sprintf("the API version in the data (%s) does not match the expected API version (%s)", av, c.apiVersion()))
	}
	if kind == "" {
		obj["kind"] = c.def.Kind
	} else if kind != c.def.Kind {
		name, _ := metadata(obj)["name"].(string)
		return apierrors.NewInvalid(schema.GroupKind{Group: c.def.Group, Kind: kind}, name, field.ErrorList{
			field.Invalid(field.NewPath("kind"), kind, "must be "+c.def.Kind),
		})
	}
	return nil
}

// typedDecodeError is upstream's 400 for a built-in's body of another
// group, version or kind: the words its handler adds to the decoder's
// error (typedDecodeCause).
func typedDecodeError(c *call, apiVersion, kind string, obj map[string]any) error {
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return apierrors.NewBadRequest(err.Error())
	}
	return apierrors.NewBadRequest(fmt.Sprintf("%s in version %q cannot be handled as a %s: %v",
		kind, gv.Version, c.def.Kind, typedDecodeCause(c, gv.WithKind(kind), obj)))
}

// typedDecodeCause is the error of upstream's decoding of a built-in's
// object that names another group, version or kind, gvk: its scheme
// decodes the object as gvk's Go type, then fails to convert it to the
// resource's internal type; or it knows no such kind. The scheme here is
// what crdserver serves.
func typedDecodeCause(c *call, gvk schema.GroupVersionKind, obj map[string]any) error {
	def, ok := servedDefinition(c.table, gvk)
	if !ok {
		return fmt.Errorf("no kind %q is registered for version %q in scheme %q", gvk.Kind, gvk.GroupVersion().String(), "pkg/runtime/scheme.go:111")
	}
	if tc, ok := hooksIn(def, gvk.Version).(registry.TypeChecker); ok && def.Kind == gvk.Kind {
		if err := tc.CheckType(obj); err != nil {
			return decoderError(err)
		}
	}
	return fmt.Errorf("converting (%s.%s) to (%s.%s): unknown conversion", gvk.Version, gvk.Kind, internalPackage(c.def.Group), c.def.Kind)
}

// decoderError is the decoding error a registry.TypeChecker's error
// wraps: without the words upstream's create and update handlers add,
// which its patch handler does not.
func decoderError(err error) error {
	if inner := errors.Unwrap(err); inner != nil {
		return inner
	}
	return err
}

// servedDefinition is the served definition of gvk's kind (or of the
// kind whose list it is) at gvk's group and version.
func servedDefinition(t *registry.Table, gvk schema.GroupVersionKind) (*registry.Definition, bool) {
	for _, d := range t.Definitions() {
		if d.Group != gvk.Group || (d.Kind != gvk.Kind && d.Kind+"List" != gvk.Kind) {
			continue
		}
		if _, ok := d.ServedVersion(gvk.Version); ok {
			return d, true
		}
	}
	return nil, false
}

// internalPackage names the Go package of a group's internal types in
// upstream's messages: core for the core group (and events.k8s.io, whose
// Events are core's), else the group's first label.
func internalPackage(group string) string {
	if group == "" || group == "events.k8s.io" {
		return "core"
	}
	first, _, _ := strings.Cut(group, ".")
	return first
}

// checkNameAndNamespace refuses a body whose namespace or name differs from
// the URL's, in that order, as upstream does: a namespaced object without
// one takes the URL's; a cluster-scoped object's is dropped.
func checkNameAndNamespace(c *call, obj map[string]any) error {
	md := metadata(obj)
	ns, _ := md["namespace"].(string)
	switch {
	case !c.def.Namespaced():
		delete(md, "namespace")
	case ns == "":
		md["namespace"] = c.info.Namespace
	case ns != c.info.Namespace:
		return apierrors.NewBadRequest("the namespace of the provided object does not match the namespace sent on the request")
	}
	switch name, _ := md["name"].(string); name {
	case c.info.Name:
		return nil
	case "":
		return apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s based on URL) was undeterminable: name must be provided", c.info.Name))
	default:
		return apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", name, c.info.Name))
	}
}

// summarize is upstream's short form of a body in decoding errors: an
// object's first 30 bytes as text, anything else in hex.
func summarize(data []byte) string {
	const max = 30
	text := len(data) > 0 && data[0] == '{'
	cut := data
	if len(cut) > max {
		cut = cut[:max]
	}
	var s string
	switch {
	case len(data) == 0:
		return "<empty>"
	case text:
		s = string(cut)
	default:
		s = hex.EncodeToString(cut)
	}
	if len(data) > max {
		s += " ..."
	}
	return s
}
