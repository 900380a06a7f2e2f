package filters

import (
	"net/http"
	"testing"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crdserver/crdserver/internal/authn"
	"github.com/crdserver/crdserver/internal/flowcontrol"
)

// Classify names the matching FlowSchema and level in upstream's headers,
// for watches too but not for other long-running requests.
func TestClassifyHeaders(t *testing.T) {
	everyone := flowcontrolv1.PolicyRulesWithSubjects{
		Subjects:         []flowcontrolv1.Subject{{Kind: flowcontrolv1.SubjectKindGroup, Group: &flowcontrolv1.GroupSubject{Name: "*"}}},
		ResourceRules:    []flowcontrolv1.ResourcePolicyRule{{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}, Namespaces: []string{"*"}, ClusterScope: true}},
		NonResourceRules: []flowcontrolv1.NonResourcePolicyRule{{Verbs: []string{"*"}, NonResourceURLs: []string{"*"}}},
	}
	c := flowcontrol.New(
		[]flowcontrolv1.FlowSchema{{ObjectMeta: metav1.ObjectMeta{Name: "all", UID: "fs-uid"}, Spec: flowcontrolv1.FlowSchemaSpec{
			PriorityLevelConfiguration: flowcontrolv1.PriorityLevelConfigurationReference{Name: "l"}, MatchingPrecedence: 100, Rules: []flowcontrolv1.PolicyRulesWithSubjects{everyone},
		}}},
		[]flowcontrolv1.PriorityLevelConfiguration{{ObjectMeta: metav1.ObjectMeta{Name: "l", UID: "pl-uid"}}},
		flowcontrol.Mandatory{},
	)
	h := Classify(func() *flowcontrol.Classifier { return c })(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	u := &authn.User{Name: "u", Groups: []string{authn.Authenticated}}
	for _, tc := range []struct {
		path       string
		classified bool
	}{
		{"/api/v1/namespaces/a/pods", true},
		{"/api/v1/namespaces/a/pods?watch=1", true},
		{"/api/v1/namespaces/a/pods/p/log", false},
		{"/version", true},
	} {
		w := as(h, u, http.MethodGet, tc.path)
		fs, pl := w.Header().Get("X-Kubernetes-PF-FlowSchema-UID"), w.Header().Get("X-Kubernetes-PF-PriorityLevel-UID")
		if got := fs == "fs-uid" && pl == "pl-uid"; got != tc.classified || !tc.classified && (fs != "" || pl != "") {
			t.Errorf("%s: headers %q %q, want classified %v", tc.path, fs, pl, tc.classified)
		}
	}
}
