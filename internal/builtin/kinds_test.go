package builtin

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"reflect"
	"strings"
	"testing"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"github.com/crdserver/crdserver/internal/authn"
	"github.com/crdserver/crdserver/internal/registry"
)

// create prepares obj as the handler does on create (uid, then the
// hooks) and returns its validation errors.
func create(t *testing.T, def *registry.Definition, y string) (map[string]any, error) {
	t.Helper()
	obj := decodeYAML(t, y)
	md, _ := obj["metadata"].(map[string]any)
	md["uid"] = "8a3d6f4e-0000-4000-8000-000000000001"
	if p, ok := def.Hooks.(registry.CreatePreparer); ok {
		p.PrepareForCreate(obj)
	}
	return obj, def.Hooks.(registry.Validator).Validate(obj).ToAggregate()
}

const podSpec = `{containers: [{name: c, image: i}], restartPolicy: Never}`

// The new built-ins refuse bad objects with upstream's messages and
// field paths.
func TestKindsValidation(t *testing.T) {
	csr := testCSR(t)
	for _, tc := range []struct {
		name string
		def  func() *registry.Definition
		obj  string
		want string // "" = valid
	}{
		// batch/v1 jobs
		{line(), Jobs, `{kind: Job, metadata: {name: j}, spec: {template: {spec: ` + podSpec + `}}}`, ""},
		{line(), Jobs, `{kind: Job, metadata: {name: j}, spec: {template: {spec: {containers: [{name: c, image: i}]}}}}`, `spec.template.spec.restartPolicy: Required value: valid values: "OnFailure", "Never"`},
		{line(), Jobs, `{kind: Job, metadata: {name: j}, spec: {template: {spec: {containers: [{name: c, image: i}], restartPolicy: Sometimes}}}}`, `spec.template.spec.restartPolicy: Unsupported value: "Sometimes": supported values: "OnFailure", "Never"`},
		{line(), Jobs, `{kind: Job, metadata: {name: j}, spec: {parallelism: -1, template: {spec: ` + podSpec + `}}}`, "spec.parallelism: Invalid value: -1: must be greater than or equal to 0"},
		{line(), Jobs, `{kind: Job, metadata: {name: j}, spec: {backoffLimit: -1, template: {spec: ` + podSpec + `}}}`, "spec.backoffLimit: Invalid value: -1: must be greater than or equal to 0"},
		{line(), Jobs, `{kind: Job, metadata: {name: j}, spec: {completionMode: Indexed, parallelism: 2, template: {spec: ` + podSpec + `}}}`, "spec.completions: Required value: when completion mode is Indexed"},
		{line(), Jobs, `{kind: Job, metadata: {name: j}, spec: {completionMode: Sometimes, template: {spec: ` + podSpec + `}}}`, `spec.completionMode: Unsupported value: "Sometimes": supported values: "NonIndexed", "Indexed"`},
		{line(), Jobs, `{kind: Job, metadata: {name: j}, spec: {manualSelector: true, template: {spec: ` + podSpec + `}}}`, "spec.selector: Required value"},
		{line(), Jobs, `{kind: Job, metadata: {name: j}, spec: {manualSelector: true, selector: {matchLabels: {a: b}}, template: {spec: ` + podSpec + `}}}`, "spec.template.metadata.labels: Invalid value: null: `selector` does not match template `labels`"},
		{line(), Jobs, `{kind: Job, metadata: {name: j}, spec: {selector: {matchLabels: {a: b}}, template: {metadata: {labels: {a: b}}, spec: ` + podSpec + `}}}`, "spec.selector: Invalid value: {\"matchLabels\":{\"a\":\"b\",\"batch.kubernetes.io/controller-uid\":\"8a3d6f4e-0000-4000-8000-000000000001\"}}: `selector` not auto-generated"},
		{line(), Jobs, `{kind: Job, metadata: {name: j}, spec: {template: {spec: {containers: [{name: c}], restartPolicy: Never}}}}`, "spec.template.spec.containers[0].image: Required value"},
		// batch/v1 cronjobs
		{line(), CronJobs, `{kind: CronJob, metadata: {name: c}, spec: {schedule: "*/1 * * * *", jobTemplate: {spec: {template: {spec: ` + podSpec + `}}}}}`, ""},
		{line(), CronJobs, `{kind: CronJob, metadata: {name: c}, spec: {jobTemplate: {spec: {template: {spec: ` + podSpec + `}}}}}`, "spec.schedule: Required value"},
		{line(), CronJobs, `{kind: CronJob, metadata: {name: c}, spec: {schedule: "not a schedule", jobTemplate: {spec: {template: {spec: ` + podSpec + `}}}}}`, `spec.schedule: Invalid value: "not a schedule": expected exactly 5 fields, found 3: [not a schedule]`},
		{line(), CronJobs, `{kind: CronJob, metadata: {name: c}, spec: {schedule: "TZ=UTC 0 * * * *", jobTemplate: {spec: {template: {spec: ` + podSpec + `}}}}}`, "cannot use TZ or CRON_TZ in schedule, use timeZone field instead"},
		{line(), CronJobs, `{kind: CronJob, metadata: {name: c}, spec: {schedule: "@hourly", timeZone: "Mars/Olympus", jobTemplate: {spec: {template: {spec: ` + podSpec + `}}}}}`, `spec.timeZone: Invalid value: "Mars/Olympus": unknown time zone Mars/Olympus`},
		{line(), CronJobs, `{kind: CronJob, metadata: {name: c}, spec: {schedule: "@hourly", concurrencyPolicy: Sometimes, jobTemplate: {spec: {template: {spec: ` + podSpec + `}}}}}`, `spec.concurrencyPolicy: Unsupported value: "Sometimes": supported values: "Allow", "Forbid", "Replace"`},
		{line(), CronJobs, `{kind: CronJob, metadata: {name: c}, spec: {schedule: "@hourly", jobTemplate: {spec: {selector: {matchLabels: {a: b}}, template: {spec: ` + podSpec + `}}}}}`, "spec.jobTemplate.spec.selector: Invalid value: {\"matchLabels\":{\"a\":\"b\"}}: `selector` will be auto-generated"},
		{line(), CronJobs, `{kind: CronJob, metadata: {name: a-name-that-is-rather-longer-than-fifty-two-characters}, spec: {schedule: "@hourly", jobTemplate: {spec: {template: {spec: ` + podSpec + `}}}}}`, "metadata.name: Invalid value: \"a-name-that-is-rather-longer-than-fifty-two-characters\": must be no more than 52 characters"},
		// autoscaling/v2 horizontalpodautoscalers
		{line(), HorizontalPodAutoscalers, `{kind: HorizontalPodAutoscaler, metadata: {name: h}, spec: {scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: d}, maxReplicas: 3}}`, ""},
		{line(), HorizontalPodAutoscalers, `{kind: HorizontalPodAutoscaler, metadata: {name: h}, spec: {scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: d}}}`, "spec.maxReplicas: Required value"},
		{line(), HorizontalPodAutoscalers, `{kind: HorizontalPodAutoscaler, metadata: {name: h}, spec: {scaleTargetRef: {apiVersion: v1, kind: ReplicationController, name: d}, maxReplicas: 3}}`, "spec.scaleTargetRef.apiVersion: Invalid value: \"v1\": apiVersion must specify API group"},
		{line(), HorizontalPodAutoscalers, `{kind: HorizontalPodAutoscaler, metadata: {name: h}, spec: {scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: d}, minReplicas: 5, maxReplicas: 3}}`, "spec.maxReplicas: Invalid value: 3: must be greater than or equal to `minReplicas`"},
		{line(), HorizontalPodAutoscalers, `{kind: HorizontalPodAutoscaler, metadata: {name: h}, spec: {scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: d}, minReplicas: 0, maxReplicas: 3}}`, "spec.minReplicas: Invalid value: 0: must be greater than or equal to 1"},
		{line(), HorizontalPodAutoscalers, `{kind: HorizontalPodAutoscaler, metadata: {name: h}, spec: {scaleTargetRef: {name: d}, maxReplicas: 3}}`, "spec.scaleTargetRef.kind: Required value"},
		{line(), HorizontalPodAutoscalers, `{kind: HorizontalPodAutoscaler, metadata: {name: h}, spec: {scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: d}, maxReplicas: 3, metrics: [{type: Pods}]}}`, "spec.metrics[0].pods: Required value: must populate information for the given metric source"},
		{line(), HorizontalPodAutoscalers, `{kind: HorizontalPodAutoscaler, metadata: {name: h}, spec: {scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: d}, maxReplicas: 3, metrics: [{type: Magic}]}}`, `spec.metrics[0].type: Unsupported value: "Magic"`},
		// policy/v1 poddisruptionbudgets
		{line(), PodDisruptionBudgets, `{kind: PodDisruptionBudget, metadata: {name: p}, spec: {minAvailable: 1, selector: {matchLabels: {a: b}}}}`, ""},
		{line(), PodDisruptionBudgets, `{kind: PodDisruptionBudget, metadata: {name: p}, spec: {minAvailable: 1, maxUnavailable: 1}}`, "minAvailable and maxUnavailable cannot be both set"},
		{line(), PodDisruptionBudgets, `{kind: PodDisruptionBudget, metadata: {name: p}, spec: {maxUnavailable: "120%"}}`, `spec.maxUnavailable: Invalid value: "120%": must not be greater than 100%`},
		{line(), PodDisruptionBudgets, `{kind: PodDisruptionBudget, metadata: {name: p}, spec: {minAvailable: -1}}`, "spec.minAvailable: Invalid value: -1: must be greater than or equal to 0"},
		{line(), PodDisruptionBudgets, `{kind: PodDisruptionBudget, metadata: {name: p}, spec: {unhealthyPodEvictionPolicy: Never}}`, `spec.unhealthyPodEvictionPolicy: Unsupported value: "Never": supported values: "AlwaysAllow", "IfHealthyBudget"`},
		// networking.k8s.io/v1 ingresses and ingressclasses
		{line(), ingressesWithoutClasses, `{kind: Ingress, metadata: {name: i}, spec: {defaultBackend: {service: {name: s, port: {number: 80}}}}}`, ""},
		{line(), ingressesWithoutClasses, `{kind: Ingress, metadata: {name: i}, spec: {}}`, "spec: Invalid value: null: either `defaultBackend` or `rules` must be specified"},
		{line(), ingressesWithoutClasses, `{kind: Ingress, metadata: {name: i}, spec: {rules: [{host: 1.2.3.4, http: {paths: [{path: /, pathType: Prefix, backend: {service: {name: s, port: {number: 80}}}}]}}]}}`, `spec.rules[0].host: Invalid value: "1.2.3.4": must be a DNS name, not an IP address`},
		{line(), ingressesWithoutClasses, `{kind: Ingress, metadata: {name: i}, spec: {rules: [{http: {paths: [{path: /, backend: {service: {name: s, port: {number: 80}}}}]}}]}}`, "spec.rules[0].http.paths[0].pathType: Required value: pathType must be specified"},
		{line(), ingressesWithoutClasses, `{kind: Ingress, metadata: {name: i}, spec: {rules: [{http: {paths: [{path: a, pathType: Exact, backend: {service: {name: s, port: {number: 80}}}}]}}]}}`, `spec.rules[0].http.paths[0].path: Invalid value: "a": must be an absolute path`},
		{line(), ingressesWithoutClasses, `{kind: Ingress, metadata: {name: i}, spec: {defaultBackend: {service: {name: s}}}}`, "spec.defaultBackend: Required value: port name or number is required"},
		{line(), ingressesWithoutClasses, `{kind: Ingress, metadata: {name: i}, spec: {defaultBackend: {}}}`, `spec.defaultBackend: Invalid value: "": resource or service backend is required`},
		{line(), ingressesWithoutClasses, `{kind: Ingress, metadata: {name: i}, spec: {defaultBackend: {service: {name: s, port: {number: 80}}}, tls: [{hosts: ["*.example.com"], secretName: tls}]}}`, ""},
		{line(), ingressesWithoutClasses, `{kind: Ingress, metadata: {name: i}, spec: {defaultBackend: {service: {name: s, port: {number: 80}}}, tls: [{hosts: [Bad_Host], secretName: Bad_Secret}]}}`, `spec.tls[0].hosts[0]: Invalid value: "Bad_Host"`},
		{line(), ingressesWithoutClasses, `{kind: Ingress, metadata: {name: i}, spec: {defaultBackend: {service: {name: s, port: {number: 80}}}, tls: [{secretName: Bad_Secret}]}}`, `spec.tls[0].secretName: Invalid value: "Bad_Secret"`},
		{line(), IngressClasses, `{kind: IngressClass, metadata: {name: c}, spec: {controller: example.com/ingress}}`, ""},
		{line(), IngressClasses, `{kind: IngressClass, metadata: {name: c}, spec: {controller: "no-domain"}}`, `spec.controller: Invalid value: "no-domain": must be a domain-prefixed path (such as "acme.io/foo")`},
		{line(), IngressClasses, `{kind: IngressClass, metadata: {name: c}, spec: {controller: example.com/i, parameters: {kind: K, name: p, namespace: ns}}}`, "spec.parameters.namespace: Forbidden: `parameters.scope` is set to 'Cluster'"},
		{line(), IngressClasses, `{kind: IngressClass, metadata: {name: c}, spec: {controller: example.com/i, parameters: {kind: K, name: p, scope: Namespace}}}`, "spec.parameters.namespace: Required value: `parameters.scope` is set to 'Namespace'"},
		{line(), NetworkPolicies, `{kind: NetworkPolicy, metadata: {name: np}, spec: {podSelector: {}, ingress: [{from: [{ipBlock: {cidr: 10.0.0.0/8, except: [10.1.0.0/16]}}], ports: [{port: 80}]}]}}`, ""},
		{line(), NetworkPolicies, `{kind: NetworkPolicy, metadata: {name: np}, spec: {podSelector: {}, ingress: [{from: [{}]}]}}`, "spec.ingress[0].from[0]: Required value: must specify a peer"},
		{line(), NetworkPolicies, `{kind: NetworkPolicy, metadata: {name: np}, spec: {podSelector: {}, egress: [{to: [{ipBlock: {cidr: 10.0.0.0/8}, podSelector: {}}]}]}}`, "spec.egress[0].to[0]: Forbidden: may not specify both ipBlock and another peer"},
		{line(), NetworkPolicies, `{kind: NetworkPolicy, metadata: {name: np}, spec: {podSelector: {}, ingress: [{from: [{ipBlock: {cidr: 10.0.0.0/8, except: [192.168.0.0/16]}}]}]}}`, "spec.ingress[0].from[0].ipBlock.except[0]: Invalid value: \"192.168.0.0/16\": must be a strict subset of `cidr`"},
		{line(), NetworkPolicies, `{kind: NetworkPolicy, metadata: {name: np}, spec: {podSelector: {}, ingress: [{ports: [{port: 80, endPort: 70}]}]}}`, "spec.ingress[0].ports[0].endPort: Invalid value: 70: must be greater than or equal to `port`"},
		{line(), NetworkPolicies, `{kind: NetworkPolicy, metadata: {name: np}, spec: {podSelector: {}, ingress: [{ports: [{protocol: ICMP}]}]}}`, `spec.ingress[0].ports[0].protocol: Unsupported value: "ICMP": supported values: "TCP", "UDP", "SCTP"`},
		{line(), NetworkPolicies, `{kind: NetworkPolicy, metadata: {name: np}, spec: {podSelector: {}, policyTypes: [Sideways]}}`, `spec.policyTypes[0]: Unsupported value: "Sideways": supported values: "Ingress", "Egress"`},
		// certificates.k8s.io/v1 certificatesigningrequests
		{line(), CertificateSigningRequests, `{kind: CertificateSigningRequest, metadata: {name: c}, spec: {request: ` + csr + `, signerName: example.com/s, usages: [client auth]}}`, ""},
		{line(), CertificateSigningRequests, `{kind: CertificateSigningRequest, metadata: {name: c}, spec: {request: Zm9v, signerName: example.com/s, usages: [client auth]}}`, "spec.request: Invalid value: \"Zm9v\": PEM block type must be CERTIFICATE REQUEST"},
		{line(), CertificateSigningRequests, `{kind: CertificateSigningRequest, metadata: {name: c}, spec: {request: ` + csr + `, signerName: example.com/s}}`, "spec.usages: Required value"},
		{line(), CertificateSigningRequests, `{kind: CertificateSigningRequest, metadata: {name: c}, spec: {request: ` + csr + `, signerName: nodomain, usages: [client auth]}}`, `spec.signerName: Invalid value: "nodomain": must be a fully qualified domain and path of the form 'example.com/signer-name'`},
		{line(), CertificateSigningRequests, `{kind: CertificateSigningRequest, metadata: {name: c}, spec: {request: ` + csr + `, signerName: example.com/s, usages: [flying]}}`, `spec.usages[0]: Unsupported value: "flying"`},
		{line(), CertificateSigningRequests, `{kind: CertificateSigningRequest, metadata: {name: c}, spec: {request: ` + csr + `, signerName: example.com/s, usages: [client auth], expirationSeconds: 60}}`, "spec.expirationSeconds: Invalid value: 60: may not specify a duration less than 600 seconds (10 minutes)"},
		// node.k8s.io, scheduling.k8s.io, storage.k8s.io
		{line(), RuntimeClasses, `{kind: RuntimeClass, metadata: {name: r}, handler: runsc}`, ""},
		{line(), RuntimeClasses, `{kind: RuntimeClass, metadata: {name: r}}`, "handler: Required value"},
		{line(), RuntimeClasses, `{kind: RuntimeClass, metadata: {name: r}, handler: Bad_Handler}`, `handler: Invalid value: "Bad_Handler": a lowercase RFC 1123 label must consist of`},
		{line(), PriorityClasses, `{kind: PriorityClass, metadata: {name: p}, value: 1000}`, ""},
		{line(), PriorityClasses, `{kind: PriorityClass, metadata: {name: p}, value: 2000000000}`, "value: Forbidden: maximum allowed value of a user defined priority is 1000000000"},
		{line(), PriorityClasses, `{kind: PriorityClass, metadata: {name: system-mine}, value: 1}`, "metadata.name: Forbidden: priority class names with 'system-' prefix are reserved for system use only. error: system-mine is not a known system priority class"},
		{line(), PriorityClasses, `{kind: PriorityClass, metadata: {name: system-node-critical}, value: 2000001000}`, ""},
		{line(), PriorityClasses, `{kind: PriorityClass, metadata: {name: p}, value: 1, preemptionPolicy: Sometimes}`, `preemptionPolicy: Unsupported value: "Sometimes": supported values: "PreemptLowerPriority", "Never"`},
		{line(), CSINodes, `{kind: CSINode, metadata: {name: node1}, spec: {drivers: [{name: ebs.csi.aws.com, nodeID: i-1}]}}`, ""},
		{line(), CSINodes, `{kind: CSINode, metadata: {name: node1}, spec: {drivers: [{name: d.example.com}]}}`, "spec.drivers[0].nodeID: Required value"},
		{line(), CSINodes, `{kind: CSINode, metadata: {name: node1}, spec: {drivers: [{name: d.example.com, nodeID: a}, {name: d.example.com, nodeID: b}]}}`, `spec.drivers[1].name: Duplicate value: "d.example.com"`},
	} {
		_, err := create(t, tc.def(), tc.obj)
		checkErrors(t, tc.name, err, tc.want)
	}
}

// testCSR returns a signed PEM certificate request, base64-encoded as
// its JSON form is.
func testCSR(t *testing.T) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: "alice"}}, key)
	if err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}))
}

// A job without a manual selector gets upstream's generated selector and
// pod labels, and its defaults.
func TestJobDefaults(t *testing.T) {
	obj, err := create(t, Jobs(), `{kind: Job, metadata: {name: pi, namespace: default}, spec: {template: {spec: `+podSpec+`}}}`)
	if err != nil {
		t.Fatal(err)
	}
	uid := "8a3d6f4e-0000-4000-8000-000000000001"
	for path, want := range map[string]any{
		"spec.completions": int64(1), "spec.parallelism": int64(1), "spec.backoffLimit": int64(6),
		"spec.completionMode": "NonIndexed", "spec.suspend": false, "spec.manualSelector": false,
		"spec.podReplacementPolicy": "TerminatingOrFailed",
	} {
		if got := lookup(obj, path); got != want {
			t.Errorf("%s = %#v, want %#v", path, got, want)
		}
	}
	sel := lookup(obj, "spec.selector.matchLabels").(map[string]any)
	if sel[controllerUIDLabel] != uid {
		t.Errorf("selector %v", sel)
	}
	l := lookup(obj, "spec.template.metadata.labels").(map[string]any)
	// The Job without labels takes its template's, as upstream's
	// defaulting gives them when it reads the Job back.
	jl, _ := lookup(obj, "metadata.labels").(map[string]any)
	for k, v := range map[string]string{jobNameLabel: "pi", legacyJobNameLabel: "pi", controllerUIDLabel: uid, legacyControllerUIDLabel: uid} {
		if l[k] != v {
			t.Errorf("template label %s = %v, want %s", k, l[k], v)
		}
		if jl[k] != v {
			t.Errorf("job label %s = %v, want %s", k, jl[k], v)
		}
	}
	if got := Jobs().Hooks.(registry.FieldComputer).ComputedFields(obj); got["status.successful"] != "0" {
		t.Errorf("computed fields %v", got)
	}
}

// A job's selector and (unless suspended) template may not change.
func TestJobUpdateImmutable(t *testing.T) {
	def := Jobs()
	old, err := create(t, def, `{kind: Job, metadata: {name: pi, namespace: default}, spec: {template: {spec: `+podSpec+`}}}`)
	if err != nil {
		t.Fatal(err)
	}
	obj := runtime.DeepCopyJSON(old)
	lookup(obj, "spec.template.spec.containers.0").(map[string]any)["image"] = "j"
	def.Hooks.(registry.UpdatePreparer).PrepareForUpdate(obj, old)
	got := def.Hooks.(registry.Validator).ValidateUpdate(obj, old).ToAggregate()
	checkErrors(t, line(), got, "spec.template: Invalid value")
}

// autoscaling/v1 carries what v2 has beyond a CPU target in annotations:
// a v2 object read in v1 and written back is the same v2 object.
func TestHPAConversionRoundTrip(t *testing.T) {
	v2 := &autoscalingv2.HorizontalPodAutoscaler{
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{Kind: "Deployment", Name: "web", APIVersion: "apps/v1"},
			MinReplicas:    ptr.To[int32](2), MaxReplicas: 10,
			Metrics: []autoscalingv2.MetricSpec{
				{Type: autoscalingv2.PodsMetricSourceType, Pods: &autoscalingv2.PodsMetricSource{
					Metric: autoscalingv2.MetricIdentifier{Name: "qps"},
					Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: ptr.To(resource.MustParse("1k"))},
				}},
				cpuUtilizationMetric(60),
			},
			Behavior: &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleDown: hpaScaleDown()},
		},
		Status: autoscalingv2.HorizontalPodAutoscalerStatus{
			CurrentReplicas: 3, DesiredReplicas: 4,
			Conditions: []autoscalingv2.HorizontalPodAutoscalerCondition{{Type: autoscalingv2.AbleToScale, Status: "True", Reason: "ReadyForNewScale"}},
		},
	}
	v2.Annotations = map[string]string{"keep": "me"}
	v1 := hpaToV1(v2)
	if got := ptr.Deref(v1.Spec.TargetCPUUtilizationPercentage, 0); got != 60 {
		t.Errorf("targetCPUUtilizationPercentage = %d, want 60", got)
	}
	for _, k := range []string{hpaMetricsAnnotation, hpaBehaviorAnnotation, hpaConditionsAnnotation, "keep"} {
		if _, ok := v1.Annotations[k]; !ok {
			t.Errorf("v1 lacks annotation %s: %v", k, v1.Annotations)
		}
	}
	if want := `[{"type":"Pods","pods":{"metricName":"qps","targetAverageValue":"1k"}}]`; v1.Annotations[hpaMetricsAnnotation] != want {
		t.Errorf("metrics annotation %s, want %s", v1.Annotations[hpaMetricsAnnotation], want)
	}
	if !strings.HasPrefix(v1.Annotations[hpaBehaviorAnnotation], `{"ScaleUp":null,"ScaleDown":{"StabilizationWindowSeconds":null,"SelectPolicy":"Max","Policies":[{"Type":"Percent"`) {
		t.Errorf("behavior annotation %s", v1.Annotations[hpaBehaviorAnnotation])
	}
	back := hpaToV2(v1)
	if !reflect.DeepEqual(back.Spec, v2.Spec) {
		t.Errorf("spec after v1 and back:\n%+v\nwant\n%+v", back.Spec, v2.Spec)
	}
	if !reflect.DeepEqual(back.Status.Conditions, v2.Status.Conditions) || back.Status.DesiredReplicas != 4 {
		t.Errorf("status after v1 and back: %+v", back.Status)
	}
	if !reflect.DeepEqual(back.Annotations, map[string]string{"keep": "me"}) {
		t.Errorf("annotations after v1 and back: %v", back.Annotations)
	}
}

// A v1 HPA without a CPU target gets upstream's default of 80%.
func TestHPAV1DefaultTarget(t *testing.T) {
	v2 := hpaToV2(&autoscalingv1.HorizontalPodAutoscaler{Spec: autoscalingv1.HorizontalPodAutoscalerSpec{MaxReplicas: 3}})
	if len(v2.Spec.Metrics) != 1 || !isCPUUtilization(v2.Spec.Metrics[0]) || *v2.Spec.Metrics[0].Resource.Target.AverageUtilization != 80 {
		t.Errorf("metrics %+v", v2.Spec.Metrics)
	}
}

// A network policy's ports are TCP and its policy types follow its rules.
func TestNetworkPolicyDefaults(t *testing.T) {
	obj, err := create(t, NetworkPolicies(), `{kind: NetworkPolicy, metadata: {name: np}, spec: {podSelector: {}, egress: [{ports: [{port: 53}]}]}}`)
	if err != nil {
		t.Fatal(err)
	}
	if got := lookup(obj, "spec.egress.0.ports.0.protocol"); got != "TCP" {
		t.Errorf("protocol %v", got)
	}
	if got := lookup(obj, "spec.policyTypes"); !reflect.DeepEqual(got, []any{"Ingress", "Egress"}) {
		t.Errorf("policyTypes %v", got)
	}
}

// A CSR records its requester, whatever the body says.
func TestCSRRequester(t *testing.T) {
	h := CertificateSigningRequests().Hooks.(registry.RequestPreparer)
	obj := decodeYAML(t, `{kind: CertificateSigningRequest, metadata: {name: c}, spec: {username: mallory, groups: [system:masters]}}`)
	ctx := authn.WithUser(context.Background(), &authn.User{Name: "alice", UID: "42", Groups: []string{"devs"}})
	h.PrepareForCreateIn(ctx, obj)
	if got := lookup(obj, "spec.username"); got != "alice" {
		t.Errorf("username %v", got)
	}
	if got := lookup(obj, "spec.groups.0"); got != "devs" {
		t.Errorf("groups %v", lookup(obj, "spec.groups"))
	}
}

// The Table columns are upstream's.
func TestKindsTableColumns(t *testing.T) {
	for _, tc := range []struct {
		def  *registry.Definition
		want string
	}{
		{Jobs(), "Name Status Completions Duration Age"},
		{CronJobs(), "Name Schedule Timezone Suspend Active Last Schedule Age"},
		{HorizontalPodAutoscalers(), "Name Reference Targets MinPods MaxPods Replicas Age"},
		{PodDisruptionBudgets(), "Name Min Available Max Unavailable Allowed Disruptions Age"},
		{Ingresses(nil), "Name Class Hosts Address Ports Age"},
		{IngressClasses(), "Name Controller Parameters Age"},
		{NetworkPolicies(), "Name Pod-Selector Age"},
		{CertificateSigningRequests(), "Name Age SignerName Requestor RequestedDuration Condition"},
		{RuntimeClasses(), "Name Handler Age"},
		{PriorityClasses(), "Name Value Global-Default Age PreemptionPolicy"},
		{CSINodes(), "Name Drivers Age"},
	} {
		var names []string
		for _, c := range tc.def.Hooks.(registry.TablePrinter).TableColumns() {
			if c.Priority == 0 {
				names = append(names, c.Name)
			}
		}
		if got := strings.Join(names, " "); got != tc.want {
			t.Errorf("%s columns %q, want %q", tc.def.Resource, got, tc.want)
		}
	}
}

// Writes to /status get upstream's status checks.
func TestKindsStatusValidation(t *testing.T) {
	for _, tc := range []struct {
		name string
		def  func() *registry.Definition
		obj  string
		want string // "" = valid
	}{
		{line(), Jobs, `{kind: Job, metadata: {name: j}, status: {succeeded: 1}}`, ""},
		{line(), Jobs, `{kind: Job, metadata: {name: j}, status: {active: -1}}`, "status.active: Invalid value: -1: must be greater than or equal to 0"},
		{line(), HorizontalPodAutoscalers, `{kind: HorizontalPodAutoscaler, metadata: {name: h}, status: {currentReplicas: 2, desiredReplicas: 3}}`, ""},
		{line(), HorizontalPodAutoscalers, `{kind: HorizontalPodAutoscaler, metadata: {name: h}, status: {desiredReplicas: -3}}`, "status.desiredReplicas: Invalid value: -3: must be greater than or equal to 0"},
		{line(), PodDisruptionBudgets, `{kind: PodDisruptionBudget, metadata: {name: p}, status: {disruptionsAllowed: -1}}`, "status.disruptionsAllowed: Invalid value: -1: must be greater than or equal to 0"},
		{line(), CronJobs, `{kind: CronJob, metadata: {name: c}, status: {}}`, ""},
	} {
		obj := decodeYAML(t, tc.obj)
		err := tc.def().Hooks.(registry.StatusValidator).ValidateStatusUpdate(obj, obj).ToAggregate()
		checkErrors(t, tc.name, err, tc.want)
	}
}

// The definitions name, scope and group the kinds as upstream's discovery
// does.
func TestKindsDefinitions(t *testing.T) {
	for _, tc := range []struct {
		def                   *registry.Definition
		short, categories     string
		namespaced, status    bool
		versions, subresource string
	}{
		{Jobs(), "", "all", true, true, "v1", ""},
		{CronJobs(), "cj", "all", true, true, "v1", ""},
		{HorizontalPodAutoscalers(), "hpa", "all", true, true, "v2 v1", ""},
		{PodDisruptionBudgets(), "pdb", "", true, true, "v1", ""},
		{Ingresses(nil), "ing", "", true, true, "v1", ""},
		{IngressClasses(), "", "", false, false, "v1", ""},
		{NetworkPolicies(), "netpol", "", true, false, "v1", ""},
		{CertificateSigningRequests(), "csr", "", false, true, "v1", "approval"},
		{RuntimeClasses(), "", "", false, false, "v1", ""},
		{PriorityClasses(), "pc", "", false, false, "v1", ""},
		{CSINodes(), "", "", false, true, "v1", ""}, // status since 1.37
	} {
		d := tc.def
		var versions []string
		for _, v := range d.Versions {
			versions = append(versions, v.Name)
			if v.Subresources.Status != tc.status {
				t.Errorf("%s %s: status subresource %v, want %v", d.Resource, v.Name, v.Subresources.Status, tc.status)
			}
			var other []string
			for _, o := range v.Subresources.Other {
				other = append(other, o.Name)
			}
			if got := strings.Join(other, " "); got != tc.subresource {
				t.Errorf("%s: other subresources %q, want %q", d.Resource, got, tc.subresource)
			}
		}
		if got := strings.Join(d.ShortNames, " "); got != tc.short {
			t.Errorf("%s: short names %q, want %q", d.Resource, got, tc.short)
		}
		if got := strings.Join(d.Categories, " "); got != tc.categories {
			t.Errorf("%s: categories %q, want %q", d.Resource, got, tc.categories)
		}
		if d.Namespaced() != tc.namespaced {
			t.Errorf("%s: namespaced %v", d.Resource, d.Namespaced())
		}
		if got := strings.Join(versions, " "); got != tc.versions || d.StorageVersion().Name != tc.versions[:2] {
			t.Errorf("%s: versions %q (storage %s), want %q with the first stored", d.Resource, got, d.StorageVersion().Name, tc.versions)
		}
	}
}
