package builtin

import (
	"time"

	metatable "k8s.io/apimachinery/pkg/api/meta/table"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/crdserver/crdserver/internal/registry"
)

// The Table columns upstream prints for the admission configurations:
// counts a JSONPath cannot express.

var objectMetaDocs = metav1.ObjectMeta{}.SwaggerDoc()

var (
	_ registry.TablePrinter = webhookConfigHooks[struct{}]{}
	_ registry.TablePrinter = policyHooks{}
)

func (webhookConfigHooks[T]) TableColumns() []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{
		{Name: "Name", Type: "string", Format: "name", Description: objectMetaDocs["name"]},
		{Name: "Webhooks", Type: "integer", Description: "Webhooks indicates the number of webhooks registered in this configuration"},
		{Name: "Age", Type: "string", Description: objectMetaDocs["creationTimestamp"]},
	}
}

func (webhookConfigHooks[T]) TableRow(obj map[string]any) []any {
	hooks, _ := obj["webhooks"].([]any)
	return []any{objectName(obj), int64(len(hooks)), objectAge(obj)}
}

func (policyHooks) TableColumns() []metav1.TableColumnDefinition {
	return policyColumns("Validations", "Validations indicates the number of validation rules defined in this configuration")
}

func (policyHooks) TableRow(obj map[string]any) []any { return policyRow(obj, "validations") }

// policyColumns are an admission policy's columns: its name, how many
// rules of its kind it has (count, described by doc), its ParamKind and
// its age.
func policyColumns(count, doc string) []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{
		{Name: "Name", Type: "string", Format: "name", Description: objectMetaDocs["name"]},
		{Name: count, Type: "integer", Description: doc},
		{Name: "ParamKind", Type: "string", Description: "ParamKind specifies the kind of resources used to parameterize this policy"},
		{Name: "Age", Type: "string", Description: objectMetaDocs["creationTimestamp"]},
	}
}

// policyRow is a policy's row, counting spec.<rules>.
func policyRow(obj map[string]any, rules string) []any {
	spec, _ := obj["spec"].(map[string]any)
	rs, _ := spec[rules].([]any)
	return []any{objectName(obj), int64(len(rs)), paramKindCell(spec), objectAge(obj)}
}

func objectName(obj map[string]any) string {
	md, _ := obj["metadata"].(map[string]any)
	name, _ := md["name"].(string) // "" for a bookmark, as upstream's printers show it
	return name
}

func objectAge(obj map[string]any) string {
	md, _ := obj["metadata"].(map[string]any)
	s, _ := md["creationTimestamp"].(string)
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return "<unknown>"
	}
	return metatable.ConvertToHumanReadableDateType(metav1.NewTime(t))
}

var (
	_ registry.TablePrinter = mutatingPolicyHooks{}
	_ registry.TablePrinter = bindingHooks{}
	_ registry.TablePrinter = mutatingBindingHooks{}
)

func (mutatingPolicyHooks) TableColumns() []metav1.TableColumnDefinition {
	return policyColumns("Mutations", "Mutation indicates the number of mutations rules defined in this configuration")
}

func (mutatingPolicyHooks) TableRow(obj map[string]any) []any { return policyRow(obj, "mutations") }

// paramKindCell is a policy's ParamKind cell: apiVersion/kind, or <unset>.
func paramKindCell(spec map[string]any) string {
	pk, ok := spec["paramKind"].(map[string]any)
	if !ok {
		return "<unset>"
	}
	av, _ := pk["apiVersion"].(string)
	k, _ := pk["kind"].(string)
	return av + "/" + k
}

// policyBindingColumns are the columns of both kinds of policy binding.
func policyBindingColumns() []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{
		{Name: "Name", Type: "string", Format: "name", Description: objectMetaDocs["name"]},
		{Name: "PolicyName", Type: "string", Description: "PolicyName indicates the policy definition which the policy binding binded to"},
		{Name: "ParamRef", Type: "string", Description: "ParamRef indicates the param resource which sets the configuration param"},
		{Name: "Age", Type: "string", Description: objectMetaDocs["creationTimestamp"]},
	}
}

// policyBindingRow is a policy binding's row. Its ParamRef cell names the
// param: namespace/name (*/name without a namespace, which may be
// cluster-scoped), else the selector, else <unset>.
func policyBindingRow(obj map[string]any) []any {
	spec, _ := obj["spec"].(map[string]any)
	policy, _ := spec["policyName"].(string)
	param := "<unset>"
	if pr, ok := spec["paramRef"].(map[string]any); ok {
		name, _ := pr["name"].(string)
		ns, _ := pr["namespace"].(string)
		switch {
		case name != "" && ns != "":
			param = ns + "/" + name
		case name != "":
			param = "*/" + name
		case pr["selector"] != nil:
			var sel metav1.LabelSelector
			if m, ok := pr["selector"].(map[string]any); ok && runtime.DefaultUnstructuredConverter.FromUnstructured(m, &sel) == nil {
				param = metav1.FormatLabelSelector(&sel)
			}
		}
	}
	return []any{objectName(obj), policy, param, objectAge(obj)}
}

func (bindingHooks) TableColumns() []metav1.TableColumnDefinition { return policyBindingColumns() }
func (bindingHooks) TableRow(obj map[string]any) []any            { return policyBindingRow(obj) }

func (mutatingBindingHooks) TableColumns() []metav1.TableColumnDefinition {
	return policyBindingColumns()
}
func (mutatingBindingHooks) TableRow(obj map[string]any) []any { return policyBindingRow(obj) }
