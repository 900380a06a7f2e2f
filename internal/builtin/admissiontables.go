package builtin

import (
	"time"

	metatable "k8s.io/apimachinery/pkg/api/meta/table"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
	return []metav1.TableColumnDefinition{
		{Name: "Name", Type: "string", Format: "name", Description: objectMetaDocs["name"]},
		{Name: "Validations", Type: "integer", Description: "Validations indicates the number of validation rules defined in this configuration"},
		{Name: "ParamKind", Type: "string", Description: "ParamKind specifies the kind of resources used to parameterize this policy"},
		{Name: "Age", Type: "string", Description: objectMetaDocs["creationTimestamp"]},
	}
}

func (policyHooks) TableRow(obj map[string]any) []any {
	spec, _ := obj["spec"].(map[string]any)
	vs, _ := spec["validations"].([]any)
	paramKind := "<unset>"
	if pk, ok := spec["paramKind"].(map[string]any); ok {
		av, _ := pk["apiVersion"].(string)
		k, _ := pk["kind"].(string)
		paramKind = av + "/" + k
	}
	return []any{objectName(obj), int64(len(vs)), paramKind, objectAge(obj)}
}

func objectName(obj map[string]any) any {
	md, _ := obj["metadata"].(map[string]any)
	return md["name"]
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
