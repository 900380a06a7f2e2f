// Command gen writes internal/openapi/builtin.json: the OpenAPI v3 models of
// the built-in resources as a kube-apiserver of the release matching the
// k8s.io/api version in go.mod serves them, so that their schemas,
// descriptions and extensions are upstream's, not copies kept by hand. It
// reads the k8s.io/kubernetes module of that release at generate time only;
// the server never imports it. The models are the ones upstream publishes
// with kube-apiserver (api/openapi-spec/v3), with two things put back that
// the published documents leave out and a kube-apiserver serves:
//
//   - enum values and their descriptions (enums.go), read from the
//     definitions kube-apiserver is built with
//     (pkg/generated/openapi/zz_generated.openapi.go);
//   - the full x-kubernetes-group-version-kind list of DeleteOptions, one
//     entry per group version of kube-apiserver's scheme, which the
//     published v3 documents narrow to their own group version (the
//     openapi package narrows it per document as they do) and the
//     published v2 document, swagger.json, keeps.
//
// builtin.json holds the models named in roots and every model they refer
// to, transitively, except those the openapi package takes from the
// generated definitions of apiextensions-apiserver (the meta types,
// autoscaling/v1 Scale, the CRD types), which it adds itself. A root is
// always the published model, even when the generated definitions have
// it too (autoscaling/v1's HorizontalPodAutoscaler, generated with Scale's
// package; DeleteOptions): only the published one says which kind it is.
// Types whose generated definition has a v2 form of its own (Quantity,
// IntOrString) are the exception: the package does not take those, so they
// are here.
//
// To serve the schema of another built-in, add its object and list model
// names to roots, one line, and run `go generate ./internal/openapi`. The
// package's test fails while builtin.json is stale.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	generated "k8s.io/apiextensions-apiserver/pkg/generated/openapi"
	"k8s.io/kube-openapi/pkg/common"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// roots are the models builtin.json is made from: each built-in kind and
// its list kind.
var roots = []string{
	"io.k8s.api.core.v1.Namespace", "io.k8s.api.core.v1.NamespaceList",
	"io.k8s.api.core.v1.ConfigMap", "io.k8s.api.core.v1.ConfigMapList",
	"io.k8s.api.core.v1.Secret", "io.k8s.api.core.v1.SecretList",
	"io.k8s.api.core.v1.ServiceAccount", "io.k8s.api.core.v1.ServiceAccountList",
	"io.k8s.api.core.v1.Event", "io.k8s.api.core.v1.EventList",
	"io.k8s.api.events.v1.Event", "io.k8s.api.events.v1.EventList",
	"io.k8s.api.core.v1.PodTemplate", "io.k8s.api.core.v1.PodTemplateList",
	"io.k8s.api.core.v1.Pod", "io.k8s.api.core.v1.PodList",
	// What pods/binding, pods/eviction and the legacy bindings take.
	"io.k8s.api.core.v1.Binding", "io.k8s.api.policy.v1.Eviction",
	"io.k8s.api.core.v1.ResourceQuota", "io.k8s.api.core.v1.ResourceQuotaList",
	"io.k8s.api.core.v1.LimitRange", "io.k8s.api.core.v1.LimitRangeList",
	"io.k8s.api.core.v1.Service", "io.k8s.api.core.v1.ServiceList",
	"io.k8s.api.core.v1.Endpoints", "io.k8s.api.core.v1.EndpointsList",
	"io.k8s.api.discovery.v1.EndpointSlice", "io.k8s.api.discovery.v1.EndpointSliceList",
	"io.k8s.api.coordination.v1.Lease", "io.k8s.api.coordination.v1.LeaseList",
	"io.k8s.api.admissionregistration.v1.MutatingWebhookConfiguration", "io.k8s.api.admissionregistration.v1.MutatingWebhookConfigurationList",
	"io.k8s.api.admissionregistration.v1.ValidatingWebhookConfiguration", "io.k8s.api.admissionregistration.v1.ValidatingWebhookConfigurationList",
	"io.k8s.api.admissionregistration.v1.ValidatingAdmissionPolicy", "io.k8s.api.admissionregistration.v1.ValidatingAdmissionPolicyList",
	"io.k8s.api.admissionregistration.v1.ValidatingAdmissionPolicyBinding", "io.k8s.api.admissionregistration.v1.ValidatingAdmissionPolicyBindingList",
	"io.k8s.api.admissionregistration.v1.MutatingAdmissionPolicy", "io.k8s.api.admissionregistration.v1.MutatingAdmissionPolicyList",
	"io.k8s.api.admissionregistration.v1.MutatingAdmissionPolicyBinding", "io.k8s.api.admissionregistration.v1.MutatingAdmissionPolicyBindingList",
	"io.k8s.api.storagemigration.v1.StorageVersionMigration", "io.k8s.api.storagemigration.v1.StorageVersionMigrationList",
	"io.k8s.api.apps.v1.Deployment", "io.k8s.api.apps.v1.DeploymentList",
	"io.k8s.api.apps.v1.ReplicaSet", "io.k8s.api.apps.v1.ReplicaSetList",
	"io.k8s.api.apps.v1.StatefulSet", "io.k8s.api.apps.v1.StatefulSetList",
	"io.k8s.api.apps.v1.DaemonSet", "io.k8s.api.apps.v1.DaemonSetList",
	"io.k8s.api.core.v1.ReplicationController", "io.k8s.api.core.v1.ReplicationControllerList",
	"io.k8s.api.apps.v1.ControllerRevision", "io.k8s.api.apps.v1.ControllerRevisionList",
	"io.k8s.api.core.v1.ComponentStatus", "io.k8s.api.core.v1.ComponentStatusList",
	"io.k8s.api.batch.v1.Job", "io.k8s.api.batch.v1.JobList",
	"io.k8s.api.batch.v1.CronJob", "io.k8s.api.batch.v1.CronJobList",
	"io.k8s.api.autoscaling.v1.HorizontalPodAutoscaler", "io.k8s.api.autoscaling.v1.HorizontalPodAutoscalerList",
	"io.k8s.api.autoscaling.v2.HorizontalPodAutoscaler", "io.k8s.api.autoscaling.v2.HorizontalPodAutoscalerList",
	"io.k8s.api.policy.v1.PodDisruptionBudget", "io.k8s.api.policy.v1.PodDisruptionBudgetList",
	"io.k8s.api.networking.v1.Ingress", "io.k8s.api.networking.v1.IngressList",
	"io.k8s.api.networking.v1.IngressClass", "io.k8s.api.networking.v1.IngressClassList",
	"io.k8s.api.networking.v1.NetworkPolicy", "io.k8s.api.networking.v1.NetworkPolicyList",
	"io.k8s.api.networking.v1.IPAddress", "io.k8s.api.networking.v1.IPAddressList",
	"io.k8s.api.networking.v1.ServiceCIDR", "io.k8s.api.networking.v1.ServiceCIDRList",
	"io.k8s.api.certificates.v1.CertificateSigningRequest", "io.k8s.api.certificates.v1.CertificateSigningRequestList",
	"io.k8s.api.certificates.v1.ClusterTrustBundle", "io.k8s.api.certificates.v1.ClusterTrustBundleList",
	"io.k8s.api.certificates.v1.PodCertificateRequest", "io.k8s.api.certificates.v1.PodCertificateRequestList",
	"io.k8s.api.node.v1.RuntimeClass", "io.k8s.api.node.v1.RuntimeClassList",
	"io.k8s.api.scheduling.v1.PriorityClass", "io.k8s.api.scheduling.v1.PriorityClassList",
	"io.k8s.api.flowcontrol.v1.FlowSchema", "io.k8s.api.flowcontrol.v1.FlowSchemaList",
	"io.k8s.api.flowcontrol.v1.PriorityLevelConfiguration", "io.k8s.api.flowcontrol.v1.PriorityLevelConfigurationList",
	"io.k8s.api.storage.v1.CSINode", "io.k8s.api.storage.v1.CSINodeList",
	"io.k8s.api.core.v1.PersistentVolumeClaim", "io.k8s.api.core.v1.PersistentVolumeClaimList",
	"io.k8s.api.core.v1.PersistentVolume", "io.k8s.api.core.v1.PersistentVolumeList",
	"io.k8s.api.core.v1.Node", "io.k8s.api.core.v1.NodeList",
	"io.k8s.api.storage.v1.StorageClass", "io.k8s.api.storage.v1.StorageClassList",
	"io.k8s.api.storage.v1.CSIDriver", "io.k8s.api.storage.v1.CSIDriverList",
	"io.k8s.api.storage.v1.VolumeAttributesClass", "io.k8s.api.storage.v1.VolumeAttributesClassList",
	"io.k8s.api.storage.v1.VolumeAttachment", "io.k8s.api.storage.v1.VolumeAttachmentList",
	"io.k8s.api.storage.v1.CSIStorageCapacity", "io.k8s.api.storage.v1.CSIStorageCapacityList",
	"io.k8s.api.resource.v1.DeviceClass", "io.k8s.api.resource.v1.DeviceClassList",
	"io.k8s.api.resource.v1.ResourceClaim", "io.k8s.api.resource.v1.ResourceClaimList",
	"io.k8s.api.resource.v1.ResourceClaimTemplate", "io.k8s.api.resource.v1.ResourceClaimTemplateList",
	"io.k8s.api.resource.v1.ResourceSlice", "io.k8s.api.resource.v1.ResourceSliceList",
	"io.k8s.api.resource.v1.DeviceTaintRule", "io.k8s.api.resource.v1.DeviceTaintRuleList",
	"io.k8s.kube-aggregator.pkg.apis.apiregistration.v1.APIService", "io.k8s.kube-aggregator.pkg.apis.apiregistration.v1.APIServiceList",
	"io.k8s.api.rbac.v1.Role", "io.k8s.api.rbac.v1.RoleList",
	"io.k8s.api.rbac.v1.ClusterRole", "io.k8s.api.rbac.v1.ClusterRoleList",
	"io.k8s.api.rbac.v1.RoleBinding", "io.k8s.api.rbac.v1.RoleBindingList",
	"io.k8s.api.rbac.v1.ClusterRoleBinding", "io.k8s.api.rbac.v1.ClusterRoleBindingList",
	"io.k8s.api.authorization.v1.SubjectAccessReview", "io.k8s.api.authorization.v1.LocalSubjectAccessReview",
	"io.k8s.api.authorization.v1.SelfSubjectAccessReview", "io.k8s.api.authorization.v1.SelfSubjectRulesReview",
	// Create-only reviews and the TokenRequest of serviceaccounts/token
	// have no list kinds.
	"io.k8s.api.authentication.v1.TokenReview", "io.k8s.api.authentication.v1.SelfSubjectReview", "io.k8s.api.authentication.v1.TokenRequest",
	// The body of every delete, with the kinds it is in every group
	// version.
	deleteOptionsModel,
}

const deleteOptionsModel = "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions"

const refPrefix = "#/components/schemas/"

func main() {
	out := flag.String("o", "builtin.json", "file to write")
	flag.Parse()
	dir, err := moduleDir()
	if err == nil {
		var b []byte
		if b, err = generate(dir); err == nil {
			err = os.WriteFile(*out, b, 0o644)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

// moduleDir returns the directory of the k8s.io/kubernetes release that
// matches go.mod's k8s.io/api (v0.X.Y is Kubernetes v1.X.Y), downloading
// the module if need be.
func moduleDir() (string, error) {
	v, err := exec.Command("go", "list", "-m", "-f", "{{.Version}}", "k8s.io/api").Output()
	if err != nil {
		return "", fmt.Errorf("go list -m k8s.io/api: %w", err)
	}
	release := "v1." + strings.TrimPrefix(strings.TrimSpace(string(v)), "v0.")
	b, err := exec.Command("go", "mod", "download", "-json", "k8s.io/kubernetes@"+release).Output()
	if err != nil {
		return "", fmt.Errorf("go mod download k8s.io/kubernetes@%s: %w", release, err)
	}
	var mod struct{ Dir string }
	if err := json.Unmarshal(b, &mod); err != nil || mod.Dir == "" {
		return "", fmt.Errorf("go mod download k8s.io/kubernetes@%s: no directory in %s", release, b)
	}
	return mod.Dir, nil
}

// generate returns builtin.json's content from the k8s.io/kubernetes
// module in dir: roots and their references, sorted by name, indented.
func generate(dir string) ([]byte, error) {
	published, err := publishedModels(filepath.Join(dir, "api", "openapi-spec", "v3"))
	if err != nil {
		return nil, err
	}
	sites, defined, err := enumSites(filepath.Join(dir, "pkg", "generated", "openapi", "zz_generated.openapi.go"))
	if err != nil {
		return nil, err
	}
	provided := generated.GetOpenAPIDefinitions(func(name string) spec.Ref { return spec.MustCreateRef(refPrefix + name) })
	out := map[string]json.RawMessage{}
	queue := slices.Clone(roots)
	for len(queue) > 0 {
		name := queue[len(queue)-1]
		queue = queue[:len(queue)-1]
		if def, ok := provided[name]; ok && def.Schema.Extensions[common.ExtensionV2Schema] == nil && !slices.Contains(roots, name) {
			continue
		}
		if _, ok := out[name]; ok {
			continue
		}
		m, ok := published[name]
		if !ok {
			return nil, fmt.Errorf("no published model %s in %s", name, dir)
		}
		queue = append(queue, refsIn(m)...)
		if !defined[name] {
			// Each published model is made from a generated
			// definition: one not found means the names are read
			// wrongly, and its enum sites would be missed.
			return nil, fmt.Errorf("no generated definition of %s", name)
		}
		if m, err = withEnums(m, sites[name]); err != nil {
			return nil, fmt.Errorf("enum values of %s: %w", name, err)
		}
		out[name] = m
	}
	gvks, err := allKindsOf(filepath.Join(dir, "api", "openapi-spec", "swagger.json"), deleteOptionsModel)
	if err != nil {
		return nil, err
	}
	if out[deleteOptionsModel], err = editAt(out[deleteOptionsModel], nil, func(o *object) error {
		o.set(extGVK, gvks)
		return nil
	}); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(out); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// publishedModels reads the schemas of every document in dir. A model
// published in several documents is the same in each, but for the
// x-kubernetes-group-version-kind list of DeleteOptions and WatchEvent,
// which each document narrows to its own group version.
func publishedModels(dir string) (map[string]json.RawMessage, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil || len(files) == 0 {
		return nil, fmt.Errorf("no OpenAPI documents in %s", dir)
	}
	models := map[string]json.RawMessage{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		var doc struct {
			Components struct {
				Schemas map[string]json.RawMessage `json:"schemas"`
			} `json:"components"`
		}
		if err := json.Unmarshal(b, &doc); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		for name, m := range doc.Components.Schemas {
			models[name] = m
		}
	}
	return models, nil
}

const extGVK = "x-kubernetes-group-version-kind"

// allKindsOf returns the x-kubernetes-group-version-kind list of model in
// the published v2 document, file, which keeps every group version kind of
// kube-apiserver's scheme.
func allKindsOf(file, model string) (json.RawMessage, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var doc struct {
		Definitions map[string]map[string]json.RawMessage `json:"definitions"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	gvks, ok := doc.Definitions[model][extGVK]
	if !ok {
		return nil, fmt.Errorf("%s: no %s of %s", file, extGVK, model)
	}
	return gvks, nil
}

// refsIn returns the model names m's references point at.
func refsIn(m json.RawMessage) []string {
	var refs []string
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, c := range x {
				if s, ok := c.(string); ok && k == "$ref" {
					refs = append(refs, strings.TrimPrefix(s, refPrefix))
					continue
				}
				walk(c)
			}
		case []any:
			for _, c := range x {
				walk(c)
			}
		}
	}
	var v any
	if json.Unmarshal(m, &v) == nil {
		walk(v)
	}
	return refs
}
