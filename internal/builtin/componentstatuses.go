package builtin

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/crdserver/crdserver/internal/registry"
	"github.com/crdserver/crdserver/internal/version"
)

// ComponentStatuses is the deprecated core/v1 componentstatuses resource,
// read-only and cluster-scoped: each read probes the components, as
// upstream's does, and answers one ComponentStatus per component with a
// Healthy condition. Nothing is stored.
func ComponentStatuses(components []Component) *registry.Definition {
	v := registry.Version{Name: "v1", Served: true, Storage: true}
	return &registry.Definition{
		Resource:   "componentstatuses",
		Singular:   "componentstatus",
		Kind:       "ComponentStatus",
		ListKind:   "ComponentStatusList",
		ShortNames: []string{"cs"},
		Scope:      registry.Cluster,
		Verbs:      []string{"get", "list"},
		Versions:   []registry.Version{withLifecycle(v, new(corev1.ComponentStatus), corev1.SchemeGroupVersion.WithKind("ComponentStatus"))},
		Hooks:      componentStatusHooks{stored: newStored[corev1.ComponentStatus]("ComponentStatus", "v1"), components: components},
	}
}

// Component is one component whose health componentstatuses reports.
// Probe answers its Healthy condition's status ("True", "False" or
// "Unknown"), message and error.
type Component struct {
	Name  string
	Probe func(context.Context) (status corev1.ConditionStatus, message string, err error)
}

// componentProbeTimeout bounds each probe, as upstream's does.
const componentProbeTimeout = 20 * time.Second

// Components are those upstream's kube-apiserver probes: the controller
// manager and the scheduler on their default secure ports on the local
// host (crdserver runs neither; a read tells whether something answers
// there, as upstream's does), and etcd, as etcd-0, when etcd is not nil
// (crdserver's storage: its health is the embedded or external etcd's;
// with memory storage there is none to report).
func Components(etcd func(context.Context) error) []Component {
	cs := []Component{
		HTTPComponent("controller-manager", "https://127.0.0.1:10257/healthz"),
		HTTPComponent("scheduler", "https://127.0.0.1:10259/healthz"),
	}
	if etcd != nil {
		cs = append(cs, Component{Name: "etcd-0", Probe: func(ctx context.Context) (corev1.ConditionStatus, string, error) {
			if err := etcd(ctx); err != nil {
				return corev1.ConditionFalse, "", err
			}
			return corev1.ConditionTrue, "ok", nil
		}})
	}
	return cs
}

// HTTPComponent probes url as upstream's HTTP prober does: the answer's
// body is the message of a 2xx; another answer, or none, is unhealthy,
// with the status code or the client's error as the message.
func HTTPComponent(name, url string) Component {
	client := &http.Client{
		Timeout: componentProbeTimeout,
		Transport: &http.Transport{
			TLSClientConfig:   &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // as upstream's probe of its own components
			DisableKeepAlives: true,
			Proxy:             http.ProxyFromEnvironment,
		},
	}
	return Component{Name: name, Probe: func(ctx context.Context) (corev1.ConditionStatus, string, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return corev1.ConditionUnknown, "", fmt.Errorf("failed to construct probe request: %w", err)
		}
		v := version.Get()
		req.Header.Set("User-Agent", fmt.Sprintf("kube-probe/%s.%s", v.Major, v.Minor))
		req.Header.Set("Accept", "*/*")
		resp, err := client.Do(req)
		if err != nil {
			return corev1.ConditionFalse, err.Error(), nil
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(io.LimitReader(resp.Body, 10*1024))
		if err != nil {
			return corev1.ConditionFalse, "", err
		}
		switch {
		case resp.StatusCode >= 200 && resp.StatusCode < 300:
			return corev1.ConditionTrue, string(body), nil
		case resp.StatusCode >= 300 && resp.StatusCode < 400:
			// Upstream's prober counts an unfollowed redirect as a warning,
			// which its component status reports as Unknown.
			return corev1.ConditionUnknown, "Probe terminated redirects, Response body: " + string(body), nil
		}
		return corev1.ConditionFalse, fmt.Sprintf("HTTP probe failed with statuscode: %d", resp.StatusCode), nil
	}}
}

type componentStatusHooks struct {
	stored[corev1.ComponentStatus]
	components []Component
}

var (
	_ registry.Reader       = componentStatusHooks{}
	_ registry.TablePrinter = componentStatusHooks{}
)

func (h componentStatusHooks) Get(ctx context.Context, name string) (map[string]any, error) {
	i := slices.IndexFunc(h.components, func(c Component) bool { return c.Name == name })
	if i < 0 {
		return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "componentstatus"}, name)
	}
	return componentStatus(ctx, h.components[i])
}

// List probes every component at once; the answer is in the components'
// order (upstream's is the order its probes end in).
func (h componentStatusHooks) List(ctx context.Context) ([]map[string]any, error) {
	out := make([]map[string]any, len(h.components))
	errs := make([]error, len(h.components))
	var wg sync.WaitGroup
	for i, c := range h.components {
		wg.Go(func() { out[i], errs[i] = componentStatus(ctx, c) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// componentStatus probes c and answers its ComponentStatus.
func componentStatus(ctx context.Context, c Component) (map[string]any, error) {
	ctx, cancel := context.WithTimeout(ctx, componentProbeTimeout)
	defer cancel()
	status, message, err := c.Probe(ctx)
	cond := corev1.ComponentCondition{Type: corev1.ComponentHealthy, Status: status, Message: message}
	if err != nil {
		cond.Error = err.Error()
	}
	cs := &corev1.ComponentStatus{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ComponentStatus"},
		ObjectMeta: metav1.ObjectMeta{Name: c.Name},
		Conditions: []corev1.ComponentCondition{cond},
	}
	return runtime.DefaultUnstructuredConverter.ToUnstructured(cs)
}

func (componentStatusHooks) TableColumns() []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{
		nameColumn,
		{Name: "Status", Type: "string", Description: "Status of the component conditions"},
		{Name: "Message", Type: "string", Description: "Message of the component conditions"},
		{Name: "Error", Type: "string", Description: "Error of the component conditions"},
	}
}

// TableRow reads the Healthy condition as upstream's printer does.
func (h componentStatusHooks) TableRow(obj map[string]any) []any {
	cs, _, _ := h.Decode(obj)
	if cs == nil {
		cs = &corev1.ComponentStatus{}
	}
	status, message, errText := "Unknown", "", ""
	for _, c := range cs.Conditions {
		if c.Type == corev1.ComponentHealthy {
			status = "Unhealthy"
			if c.Status == corev1.ConditionTrue {
				status = "Healthy"
			}
			message, errText = c.Message, c.Error
			break
		}
	}
	return []any{cs.Name, status, message, errText}
}
