package managedfields

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/crdserver/crdserver/crdtest"
)

// crdserver replays the steps against an in-process crdserver through
// client-go's dynamic client, one client per User-Agent.
type crdserver struct {
	cfg      *rest.Config
	gvr      func(version string) schema.GroupVersionResource
	ns, name string
	last     *unstructured.Unstructured
}

// newCRDServer starts a crdserver with crd, for the object default/name.
func newCRDServer(t *testing.T, crd *apiextensionsv1.CustomResourceDefinition, name string) *crdserver {
	t.Helper()
	srv := crdtest.Start(t, crdtest.Options{})
	ctx := context.Background()
	ext := apiextensionsclient.NewForConfigOrDie(srv.Config)
	if _, err := ext.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crd, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating the CRD: %v", err)
	}
	err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		got, err := ext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, crd.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range got.Status.Conditions {
			if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("waiting for the CRD: %v", err)
	}
	return &crdserver{
		cfg: srv.Config,
		gvr: func(v string) schema.GroupVersionResource {
			return schema.GroupVersionResource{Group: crd.Spec.Group, Version: v, Resource: crd.Spec.Names.Plural}
		},
		ns:   "default",
		name: name,
	}
}

// newNamespaceServer starts a crdserver, for the namespace name.
func newNamespaceServer(t *testing.T, name string) *crdserver {
	t.Helper()
	srv := crdtest.Start(t, crdtest.Options{})
	return &crdserver{
		cfg: srv.Config,
		gvr: func(v string) schema.GroupVersionResource {
			return schema.GroupVersionResource{Version: v, Resource: "namespaces"}
		},
		name: name,
	}
}

func (c *crdserver) client(t *testing.T, s step) dynamic.ResourceInterface {
	t.Helper()
	cfg := rest.CopyConfig(c.cfg)
	cfg.UserAgent = s.userAgent
	d, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return d.Resource(c.gvr(s.version)).Namespace(c.ns)
}

func (c *crdserver) do(t *testing.T, s step) error {
	t.Helper()
	ctx := context.Background()
	r := c.client(t, s)
	var (
		obj *unstructured.Unstructured
		err error
	)
	switch s.op {
	case opCreate:
		obj, err = r.Create(ctx, decodeYAML(t, s.body), metav1.CreateOptions{FieldManager: s.manager})
	case opUpdate, opStatus:
		var live *unstructured.Unstructured
		if live, err = r.Get(ctx, c.name, metav1.GetOptions{}); err != nil {
			break
		}
		s.edit(live.Object)
		if s.op == opStatus {
			obj, err = r.UpdateStatus(ctx, live, metav1.UpdateOptions{FieldManager: s.manager})
		} else {
			obj, err = r.Update(ctx, live, metav1.UpdateOptions{FieldManager: s.manager})
		}
	case opMergePatch:
		obj, err = r.Patch(ctx, c.name, types.MergePatchType, []byte(s.body), metav1.PatchOptions{FieldManager: s.manager})
	case opJSONPatch:
		obj, err = r.Patch(ctx, c.name, types.JSONPatchType, []byte(s.body), metav1.PatchOptions{FieldManager: s.manager})
	case opApply, opApplyStatus:
		body, jerr := json.Marshal(decodeYAML(t, s.body).Object)
		if jerr != nil {
			t.Fatal(jerr)
		}
		force := s.force
		var sub []string
		if s.op == opApplyStatus {
			sub = []string{"status"}
		}
		obj, err = r.Patch(ctx, c.name, types.ApplyPatchType, body, metav1.PatchOptions{FieldManager: s.manager, Force: &force}, sub...)
	case opScale:
		// As kubectl scale does: a merge patch of the Scale.
		patch := fmt.Sprintf(`{"spec":{"replicas":%d}}`, s.replicas)
		if _, err = r.Patch(ctx, c.name, types.MergePatchType, []byte(patch), metav1.PatchOptions{FieldManager: s.manager}, "scale"); err != nil {
			break
		}
		obj, err = r.Get(ctx, c.name, metav1.GetOptions{})
	}
	if err != nil {
		return err
	}
	c.last = obj
	return nil
}

func (c *crdserver) managedFields() []metav1.ManagedFieldsEntry {
	if c.last == nil {
		return nil
	}
	return c.last.GetManagedFields()
}
