package e2e

import (
	"context"
	"crypto/ecdsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/crdserver/crdserver/test/kubectlbin"
	"github.com/crdserver/crdserver/test/rbacmatrix"
)

var updateRBAC = flag.Bool("update-rbac", false, "rewrite testdata/rbac/decisions.txt from the server's answers")

// rbacFixture is the path of a file in testdata/rbac.
func rbacFixture(name string) string { return filepath.Join("testdata", "rbac", name) }

// TestRBAC: an admin creates users (client certificates from the data
// directory's CA), roles and bindings; every decision of the matrix
// (users and service accounts × verbs × built-in and custom resources
// with subresources × namespaces, and non-resource paths), asked through
// SubjectAccessReview, is the one in testdata/rbac/decisions.txt, which
// compat/rbac checks against upstream's authorizer. Users then meet the
// decisions for real: 403s with upstream's message on every verb, watch
// included; what they are allowed works; kubectl auth can-i agrees; the
// escalation checks hold.
func TestRBAC(t *testing.T) {
	t.Parallel()
	srv := startServer(t, t.TempDir())
	ctx := testContext(t, 3*time.Minute)
	applyCRD(t, srv, filepath.Join("..", "rbac", "widgets-crd.yaml"), "widgets.example.com", "created")
	kubectl(t, srv, "apply", "-f", rbacFixture("policy.yaml"))
	// The aggregation controller adds widget-viewer's rules to view.
	bobView := sar("bob", []string{"viewers"}, "list", "example.com", "widgets", "", "team-b", "")
	waitFor(t, 30*time.Second, "view to aggregate widget-viewer", func() (bool, error) {
		st, err := srv.Client.AuthorizationV1().SubjectAccessReviews().Create(ctx, bobView, metav1.CreateOptions{})
		if err != nil {
			return false, err
		}
		return st.Status.Allowed, fmt.Errorf("bob may not list widgets in team-b: %+v", st.Status)
	})

	t.Run("reviews have no Table form", func(t *testing.T) {
		// Upstream's conformance spec "should return a 406 for a backend
		// which does not implement metadata".
		ssar := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
			NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: "/", Verb: "get"},
		}}
		err := srv.Client.AuthorizationV1().RESTClient().Post().Resource("selfsubjectaccessreviews").
			SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").Body(ssar).Do(ctx).Error()
		if !apierrors.IsNotAcceptable(err) {
			t.Errorf("a Table of a SelfSubjectAccessReview: %v, want 406", err)
		}
	})

	t.Run("matrix through SubjectAccessReview", func(t *testing.T) {
		got := askMatrix(t, ctx, srv.Client)
		file := rbacFixture("decisions.txt")
		if *updateRBAC {
			if err := os.WriteFile(file, []byte(got), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if got != string(want) {
			gl, wl := strings.Split(got, "\n"), strings.Split(string(want), "\n")
			for i := range min(len(gl), len(wl)) {
				if gl[i] != wl[i] {
					t.Fatalf("decision %d differs from %s (run with -update-rbac to accept):\n got %s\nwant %s", i+1, file, gl[i], wl[i])
				}
			}
			t.Fatalf("%d decisions, %s has %d", len(gl), file, len(wl))
		}
	})

	erin := newUser(t, srv, "erin")
	t.Run("403 on every verb", func(t *testing.T) {
		cms := erin.client.CoreV1().ConfigMaps("team-a")
		forbidden := func(verb, resource, name, ns string) string {
			msg := `User "erin" cannot ` + verb + ` resource "` + resource + `" in API group "`
			if strings.HasPrefix(resource, "widgets") {
				msg += `example.com"`
			} else {
				msg += `"`
			}
			if ns == "" {
				msg += " at the cluster scope"
			} else {
				msg += ` in the namespace "` + ns + `"`
			}
			base, _, _ := strings.Cut(resource, "/")
			if strings.HasPrefix(resource, "widgets") {
				base += ".example.com"
			}
			if name != "" {
				return base + ` "` + name + `" is forbidden: ` + msg
			}
			return base + " is forbidden: " + msg
		}
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c"}}
		_, getErr := cms.Get(ctx, "c", metav1.GetOptions{})
		_, listErr := cms.List(ctx, metav1.ListOptions{})
		_, watchErr := cms.Watch(ctx, metav1.ListOptions{})
		_, createErr := cms.Create(ctx, cm, metav1.CreateOptions{})
		_, updateErr := cms.Update(ctx, cm, metav1.UpdateOptions{})
		_, patchErr := cms.Patch(ctx, "c", "application/merge-patch+json", []byte(`{}`), metav1.PatchOptions{})
		deleteErr := cms.Delete(ctx, "c", metav1.DeleteOptions{})
		collectionErr := cms.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})
		_, allErr := erin.client.CoreV1().ConfigMaps("").List(ctx, metav1.ListOptions{})
		widgets := erin.dynamic.Resource(schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}).Namespace("team-b")
		_, widgetWatchErr := widgets.Watch(ctx, metav1.ListOptions{})
		_, statusErr := widgets.UpdateStatus(ctx, rbacWidget("w"), metav1.UpdateOptions{})
		_, scaleErr := widgets.Get(ctx, "w", metav1.GetOptions{}, "scale")
		for _, c := range []struct {
			err  error
			want string
		}{
			{getErr, forbidden("get", "configmaps", "c", "team-a")},
			{listErr, forbidden("list", "configmaps", "", "team-a")},
			{watchErr, forbidden("watch", "configmaps", "", "team-a")},
			{createErr, forbidden("create", "configmaps", "", "team-a")},
			{updateErr, forbidden("update", "configmaps", "c", "team-a")},
			{patchErr, forbidden("patch", "configmaps", "c", "team-a")},
			{deleteErr, forbidden("delete", "configmaps", "c", "team-a")},
			{collectionErr, forbidden("deletecollection", "configmaps", "", "team-a")},
			{allErr, forbidden("list", "configmaps", "", "")},
			{widgetWatchErr, forbidden("watch", "widgets", "", "team-b")},
			{statusErr, forbidden("update", "widgets/status", "w", "team-b")},
			{scaleErr, forbidden("get", "widgets/scale", "w", "team-b")},
		} {
			if !apierrors.IsForbidden(c.err) || c.err.Error() != c.want {
				t.Errorf("got %v\nwant 403 %s", c.err, c.want)
			}
		}
		// kubectl shows the same message.
		if out := erin.kubectlFails(t, "get", "configmaps", "-n", "team-a"); out != `Error from server (Forbidden): `+forbidden("list", "configmaps", "", "team-a") {
			t.Errorf("kubectl get configmaps as erin: %s", out)
		}
		if out := erin.kubectlFails(t, "get", "widgets", "-n", "team-b", "--watch"); out != `Error from server (Forbidden): `+forbidden("list", "widgets", "", "team-b") {
			t.Errorf("kubectl get widgets --watch as erin: %s", out)
		}
		// A binding to a role that does not exist is named in dave's
		// denials.
		dave := newUser(t, srv, "dave")
		_, err := dave.client.CoreV1().ConfigMaps("team-a").Get(ctx, "c", metav1.GetOptions{})
		if want := forbidden("get", "configmaps", "c", "team-a") + `: rbac: RBAC: role.rbac.authorization.k8s.io "not-created" not found`; err == nil || strings.Replace(err.Error(), `User "erin"`, `User "dave"`, 1) != strings.Replace(want, `User "erin"`, `User "dave"`, 1) {
			t.Errorf("dave: %v\nwant %s", err, strings.Replace(want, `User "erin"`, `User "dave"`, 1))
		}
	})

	t.Run("discovery and OpenAPI for every authenticated user", func(t *testing.T) {
		if _, err := erin.client.Discovery().ServerPreferredResources(); err != nil {
			t.Errorf("erin's discovery: %v", err)
		}
		// The reviews are created only and store nothing: no storage
		// version hash, as upstream.
		reviews, err := erin.client.Discovery().ServerResourcesForGroupVersion("authorization.k8s.io/v1")
		if err != nil || len(reviews.APIResources) != 4 {
			t.Fatalf("authorization.k8s.io/v1: %v %+v", err, reviews)
		}
		for _, r := range reviews.APIResources {
			if !slices.Equal(r.Verbs, []string{"create"}) || r.StorageVersionHash != "" {
				t.Errorf("%s: verbs %v, storageVersionHash %q; want [create] and none", r.Name, r.Verbs, r.StorageVersionHash)
			}
		}
		rbacGroup, err := erin.client.Discovery().ServerResourcesForGroupVersion("rbac.authorization.k8s.io/v1")
		if err != nil || len(rbacGroup.APIResources) != 4 || rbacGroup.APIResources[0].StorageVersionHash == "" {
			t.Errorf("rbac.authorization.k8s.io/v1: %v %+v", err, rbacGroup)
		}
		for _, p := range []string{"/openapi/v2", "/openapi/v3", "/version", "/healthz"} {
			if _, err := erin.client.Discovery().RESTClient().Get().AbsPath(p).DoRaw(ctx); err != nil {
				t.Errorf("erin GET %s: %v", p, err)
			}
		}
		if _, err := erin.client.Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx); !apierrors.IsForbidden(err) {
			t.Errorf("erin GET /metrics: %v, want 403", err)
		}
	})

	t.Run("what is allowed works", func(t *testing.T) {
		alice := newUser(t, srv, "alice")
		if _, err := alice.client.CoreV1().ConfigMaps("team-a").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "mine"}}, metav1.CreateOptions{}); err != nil {
			t.Errorf("alice (edit in team-a) creating a configmap: %v", err)
		}
		if _, err := srv.Dynamic.Resource(rbacWidgets).Namespace("team-b").Create(ctx, rbacWidget("w"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		bob := newUser(t, srv, "bob", "viewers")
		if l, err := bob.dynamic.Resource(rbacWidgets).Namespace("team-b").List(ctx, metav1.ListOptions{}); err != nil || len(l.Items) != 1 {
			t.Errorf("bob (view, aggregated) listing widgets in team-b: %v", err)
		}
		deployer := newUser(t, srv, "system:serviceaccount:team-a:deployer", "system:serviceaccounts", "system:serviceaccounts:team-a")
		scale := map[string]any{"apiVersion": "autoscaling/v1", "kind": "Scale", "metadata": map[string]any{"name": "w", "namespace": "team-b"}, "spec": map[string]any{"replicas": int64(3)}}
		if _, err := deployer.dynamic.Resource(rbacWidgets).Namespace("team-b").Update(ctx, &unstructured.Unstructured{Object: scale}, metav1.UpdateOptions{}, "scale"); err != nil {
			t.Errorf("the deployer service account scaling a widget in team-b: %v", err)
		}
		if _, err := deployer.dynamic.Resource(rbacWidgets).Namespace("team-b").Get(ctx, "w", metav1.GetOptions{}); !apierrors.IsForbidden(err) {
			t.Errorf("the deployer reading the widget itself: %v, want 403", err)
		}
		// Deleting the binding takes the rights away.
		if err := srv.Client.RbacV1().RoleBindings("team-a").Delete(ctx, "alice-edit", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 10*time.Second, "alice to lose edit in team-a", func() (bool, error) {
			_, err := alice.client.CoreV1().ConfigMaps("team-a").Get(ctx, "mine", metav1.GetOptions{})
			return apierrors.IsForbidden(err), fmt.Errorf("alice reading a configmap: %v", err)
		})
	})

	t.Run("kubectl auth can-i", func(t *testing.T) {
		bob := newUser(t, srv, "bob", "viewers")
		if out := bob.kubectl(t, "auth", "can-i", "list", "widgets.example.com", "-n", "team-b"); out != "yes" {
			t.Errorf("can-i list widgets in team-b: %q", out)
		}
		if out := bob.kubectlFails(t, "auth", "can-i", "delete", "widgets.example.com", "-n", "team-b"); out != "" {
			t.Errorf("can-i delete widgets: stderr %q", out)
		}
		list := bob.kubectl(t, "auth", "can-i", "--list", "-n", "team-b")
		for _, want := range []string{"widgets.example.com/scale", "selfsubjectaccessreviews.authorization.k8s.io", "[/apis/*]"} {
			if !strings.Contains(list, want) {
				t.Errorf("can-i --list lacks %s:\n%s", want, list)
			}
		}
		if out := kubectl(t, srv, "auth", "can-i", "create", "clusterroles"); strings.TrimSpace(out) != "yes" {
			t.Errorf("admin can-i create clusterroles: %q", out)
		}
		// The admin asks for others by impersonating them.
		if out := kubectl(t, srv, "auth", "can-i", "list", "widgets.example.com", "-n", "team-b", "--as", "bob", "--as-group", "viewers"); strings.TrimSpace(out) != "yes" {
			t.Errorf("can-i --as bob: %q", out)
		}
		if out := kubectl(t, srv, "auth", "can-i", "--list", "-n", "team-b", "--as", "erin"); strings.Contains(out, "widgets.example.com") || !strings.Contains(out, "selfsubjectrulesreviews") {
			t.Errorf("can-i --list --as erin:\n%s", out)
		}
	})

	t.Run("escalation", func(t *testing.T) {
		dave := newUser(t, srv, "dave")
		roles := dave.client.RbacV1().Roles("team-b")
		held := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "held"}, Rules: []rbacv1.PolicyRule{{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"configmaps"}}}}
		if _, err := roles.Create(ctx, held, metav1.CreateOptions{}); err != nil {
			t.Errorf("dave (admin of team-b) creating a role he holds: %v", err)
		}
		more := held.DeepCopy()
		more.Name = "more"
		more.Rules = append(more.Rules, rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"nodes"}})
		_, err := roles.Create(ctx, more, metav1.CreateOptions{})
		want := `roles.rbac.authorization.k8s.io "more" is forbidden: user "dave" (groups=["system:authenticated"]) is attempting to grant RBAC permissions not currently held:` + "\n" +
			`{APIGroups:[""], Resources:["nodes"], Verbs:["get"]}`
		if !apierrors.IsForbidden(err) || err.Error() != want {
			t.Errorf("escalating role: %v\nwant %s", err, want)
		}
		bind := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "root"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
			Subjects: []rbacv1.Subject{{Kind: "User", APIGroup: rbacv1.GroupName, Name: "dave"}}}
		_, err = dave.client.RbacV1().RoleBindings("team-b").Create(ctx, bind, metav1.CreateOptions{})
		want = `rolebindings.rbac.authorization.k8s.io "root" is forbidden: user "dave" (groups=["system:authenticated"]) is attempting to grant RBAC permissions not currently held:` + "\n" +
			`{APIGroups:["*"], Resources:["*"], Verbs:["*"]}` + "\n" + `{NonResourceURLs:["*"], Verbs:["*"]}`
		if !apierrors.IsForbidden(err) || err.Error() != want {
			t.Errorf("binding cluster-admin: %v\nwant %s", err, want)
		}
		bind.Name, bind.RoleRef.Name = "dave-view", "view"
		if _, err := dave.client.RbacV1().RoleBindings("team-b").Create(ctx, bind, metav1.CreateOptions{}); err != nil {
			t.Errorf("binding view, which admin holds: %v", err)
		}
	})

	t.Run("namespace deletion takes its bindings along", func(t *testing.T) {
		kubectl(t, srv, "delete", "namespace", "team-b", "--wait=true", "--timeout=60s")
		for _, r := range []string{"roles", "rolebindings"} {
			if out := kubectl(t, srv, "get", r, "-n", "team-b", "--no-headers", "--ignore-not-found"); strings.TrimSpace(out) != "" {
				t.Errorf("%s left in the deleted namespace:\n%s", r, out)
			}
		}
		st, err := srv.Client.AuthorizationV1().SubjectAccessReviews().Create(ctx, bobView, metav1.CreateOptions{})
		if err != nil || st.Status.Allowed {
			t.Errorf("bob may still list widgets in the deleted team-b: %v %+v", err, st.Status)
		}
	})
}

var rbacWidgets = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}

func rbacWidget(name string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]any{"name": name}, "spec": map[string]any{"replicas": int64(1)}}}
}

func sar(user string, groups []string, verb, group, resource, sub, ns, name string) *authorizationv1.SubjectAccessReview {
	return &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: user, Groups: groups,
		ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: verb, Group: group, Resource: resource, Subresource: sub, Namespace: ns, Name: name}}}
}

// askMatrix asks every case of matrix.yaml through SubjectAccessReview
// and returns the answers, one line each, in the matrix's order.
func askMatrix(t *testing.T, ctx context.Context, client kubernetes.Interface) string {
	t.Helper()
	cases, err := rbacmatrix.Load(rbacFixture("matrix.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	lines := make([]string, len(cases))
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	next := make(chan int)
	for range 8 {
		wg.Go(func() {
			for i := range next {
				c := cases[i]
				review := sar(c.User, c.Groups, c.Verb, c.Group, c.Resource, c.Subresource, c.Namespace, c.Name)
				if !c.ResourceRequest {
					review.Spec.ResourceAttributes = nil
					review.Spec.NonResourceAttributes = &authorizationv1.NonResourceAttributes{Path: c.Path, Verb: c.Verb}
				}
				got, err := client.AuthorizationV1().SubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
				if err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
					continue
				}
				lines[i] = c.Line(got.Status.Allowed, got.Status.Reason)
			}
		})
	}
	for i := range cases {
		next <- i
	}
	close(next)
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	return strings.Join(lines, "\n") + "\n"
}

// rbacUser is a user with a client certificate from the server's CA.
type rbacUser struct {
	client     kubernetes.Interface
	dynamic    dynamic.Interface
	kubeconfig string
	cacheDir   string
}

// newUser issues a client certificate for name in groups and returns
// clients and a kubeconfig that present it.
func newUser(t *testing.T, srv *server, name string, groups ...string) *rbacUser {
	t.Helper()
	cert := issueClientCert(t, filepath.Join(srv.Dir, "pki"), name, groups...)
	key, err := x509.MarshalECPrivateKey(cert.PrivateKey.(*ecdsa.PrivateKey))
	if err != nil {
		t.Fatal(err)
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Certificate[0]})
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: key})
	cfg := rest.CopyConfig(srv.Config)
	cfg.CertFile, cfg.KeyFile, cfg.CertData, cfg.KeyData = "", "", certPEM, keyPEM
	u := &rbacUser{cacheDir: t.TempDir()}
	if u.client, err = kubernetes.NewForConfig(cfg); err != nil {
		t.Fatal(err)
	}
	if u.dynamic, err = dynamic.NewForConfig(cfg); err != nil {
		t.Fatal(err)
	}
	kc, err := clientcmd.LoadFromFile(srv.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, ai := range kc.AuthInfos {
		ai.ClientCertificate, ai.ClientKey, ai.ClientCertificateData, ai.ClientKeyData = "", "", certPEM, keyPEM
	}
	u.kubeconfig = filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, u.kubeconfig); err != nil {
		t.Fatal(err)
	}
	return u
}

func (u *rbacUser) run(args ...string) (string, string, error) {
	path, err := kubectlbin.Find()
	if err != nil {
		return "", "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), kubectlLimit)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, append([]string{"--kubeconfig", u.kubeconfig, "--cache-dir", u.cacheDir}, args...)...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "KUBECONFIG=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	return out.String(), errOut.String(), err
}

// kubectl runs kubectl as the user and returns its output, trimmed.
func (u *rbacUser) kubectl(t *testing.T, args ...string) string {
	t.Helper()
	out, errOut, err := u.run(args...)
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s%s", strings.Join(args, " "), err, out, errOut)
	}
	return strings.TrimSpace(out)
}

// kubectlFails runs kubectl as the user, fails the test unless it fails,
// and returns its standard error, trimmed.
func (u *rbacUser) kubectlFails(t *testing.T, args ...string) string {
	t.Helper()
	out, errOut, err := u.run(args...)
	if err == nil {
		t.Fatalf("kubectl %s succeeded:\n%s", strings.Join(args, " "), out)
	}
	return strings.TrimSpace(errOut)
}

// TestAlwaysAllow: with --authorization-mode=AlwaysAllow every
// authenticated user may do anything but read /metrics, and reviews say
// so.
func TestAlwaysAllow(t *testing.T) {
	t.Parallel()
	srv := startServerArgs(t, t.TempDir(), "--authorization-mode=AlwaysAllow")
	ctx := testContext(t, time.Minute)
	erin := newUser(t, srv, "erin")
	if _, err := erin.client.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c"}}, metav1.CreateOptions{}); err != nil {
		t.Errorf("erin creating a configmap: %v", err)
	}
	if _, err := erin.client.Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx); !apierrors.IsForbidden(err) {
		t.Errorf("erin GET /metrics: %v, want 403", err)
	}
	if out := erin.kubectl(t, "auth", "can-i", "delete", "clusterroles"); out != "yes" {
		t.Errorf("can-i delete clusterroles: %q", out)
	}
}

// TestApplyCreateNeedsCreate: a server-side apply that creates is a
// create: a user allowed to patch ConfigMaps but not to create them
// applies to one that exists, and is refused one that does not (upstream's
// words: the authorizer's reason alone), which is not stored.
func TestApplyCreateNeedsCreate(t *testing.T) {
	t.Parallel()
	srv := startServer(t, t.TempDir())
	kubectl(t, srv, "create", "role", "patcher", "--verb=get,patch", "--resource=configmaps")
	kubectl(t, srv, "create", "rolebinding", "bob-patch", "--role=patcher", "--user=bob")
	kubectl(t, srv, "create", "configmap", "exists")
	cm := func(name string) string {
		return writeManifest(t, name+".yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: "+name+"}\ndata: {a: b}\n")
	}
	if got := kubectlLine(t, srv, "--as=bob", "apply", "--server-side", "-f", cm("exists")); got != "configmap/exists serverside-applied" {
		t.Errorf("bob's apply to an existing ConfigMap: %q", got)
	}
	got := kubectlFails(t, srv, "--as=bob", "apply", "--server-side", "-f", cm("sneaky"))
	if want := `Error from server (Forbidden): configmaps "sneaky" is forbidden:`; !strings.HasPrefix(got, want) {
		t.Errorf("bob's apply that creates: %q, want %q", got, want)
	}
	if _, _, err := kubectlResult(srv, "get", "configmap", "sneaky"); err == nil {
		t.Error("an apply refused its create stored the object")
	}
}

// TestReplaceCreates: `kubectl replace` of a missing object creates it
// for the kinds whose upstream strategies allow a PUT to create (roles
// and bindings among them), asking the authorizer for create as upstream
// does; other kinds answer NotFound.
func TestReplaceCreates(t *testing.T) {
	t.Parallel()
	srv := startServer(t, t.TempDir())
	role := func(name string) string {
		return writeManifest(t, name+".yaml", "apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata: {name: "+name+", labels: {made: by-put}}\n"+
			"rules: [{apiGroups: [''], resources: [configmaps], verbs: [get]}]\n")
	}
	if got := kubectlLine(t, srv, "replace", "-f", role("reader")); got != "role.rbac.authorization.k8s.io/reader replaced" {
		t.Errorf("replace of a missing Role: %q", got)
	}
	if got := kubectlLine(t, srv, "get", "role", "reader", "-o", "jsonpath={.metadata.labels.made} {.rules[0].verbs[0]} {.metadata.managedFields[0].operation}"); got != "by-put get Update" {
		t.Errorf("the Role a PUT created: %q", got)
	}
	cm := writeManifest(t, "cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: missing}\ndata: {a: b}\n")
	if got := kubectlFails(t, srv, "replace", "-f", cm); !strings.Contains(got, `configmaps "missing" not found`) {
		t.Errorf("replace of a missing ConfigMap: %q", got)
	}

	// Allowed to update roles but not to create them, bob's PUT of a
	// missing one is refused, and stores nothing.
	kubectl(t, srv, "create", "clusterrole", "role-updater", "--verb=get,update,escalate,bind", "--resource=roles.rbac.authorization.k8s.io")
	kubectl(t, srv, "create", "rolebinding", "bob-updates-roles", "--clusterrole=role-updater", "--user=bob")
	got := kubectlFails(t, srv, "--as=bob", "replace", "-f", role("sneaky"))
	if want := `Error from server (Forbidden): error when replacing`; !strings.HasPrefix(got, want) || !strings.Contains(got, `roles.rbac.authorization.k8s.io "sneaky" is forbidden`) {
		t.Errorf("bob's replace that creates: %q, want %q…", got, want)
	}
	if _, _, err := kubectlResult(srv, "get", "role", "sneaky"); err == nil {
		t.Error("a PUT refused its create stored the object")
	}
	if got := kubectlLine(t, srv, "--as=bob", "replace", "-f", role("reader")); got != "role.rbac.authorization.k8s.io/reader replaced" {
		t.Errorf("bob's replace of an existing Role: %q", got)
	}
}
