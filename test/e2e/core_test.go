package e2e

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestCoreBuiltins drives the core built-ins the way tools use them:
// kubectl creates ConfigMaps and Secrets and lists them with upstream's
// columns, every namespace gets a default ServiceAccount, a Lease is taken
// and renewed through client-go, events are found by field selector, and
// bad input gets upstream's 422 with nothing stored.
func TestCoreBuiltins(t *testing.T) {
	t.Parallel()
	srv := startServer(t, t.TempDir())
	const ns = "core"
	kubectl(t, srv, "create", "namespace", ns)

	t.Run("default service account", func(t *testing.T) {
		ctx := testContext(t, 60*time.Second)
		sas := srv.Client.CoreV1().ServiceAccounts(ns)
		var first *corev1.ServiceAccount
		waitFor(t, 30*time.Second, "the default service account of a new namespace", func() (bool, error) {
			sa, err := sas.Get(ctx, "default", metav1.GetOptions{})
			first = sa
			return err == nil, err
		})
		if err := sas.Delete(ctx, "default", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 30*time.Second, "the default service account made again", func() (bool, error) {
			sa, err := sas.Get(ctx, "default", metav1.GetOptions{})
			return err == nil && sa.UID != first.UID, err
		})
	})

	t.Run("root CA config map", func(t *testing.T) {
		// Every namespace holds the server's CA in kube-root-ca.crt, as
		// upstream's root CA publisher keeps it: made again when deleted,
		// put back when changed.
		ctx := testContext(t, 90*time.Second)
		ca := srv.Config.CAData
		cms := srv.Client.CoreV1().ConfigMaps(ns)
		var first *corev1.ConfigMap
		waitFor(t, 30*time.Second, "kube-root-ca.crt in a new namespace", func() (bool, error) {
			cm, err := cms.Get(ctx, "kube-root-ca.crt", metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return false, nil
			}
			first = cm
			return err == nil, err
		})
		if first.Data["ca.crt"] != string(ca) || first.Annotations["kubernetes.io/description"] == "" {
			t.Errorf("kube-root-ca.crt holds %q (annotations %v), want the kubeconfig's CA", first.Data["ca.crt"], first.Annotations)
		}
		// Its fields are kube-controller-manager's, as upstream's
		// publisher's create records them.
		managedBy := func(cm *corev1.ConfigMap) string {
			var out []string
			for _, e := range cm.ManagedFields {
				out = append(out, fmt.Sprintf("%s %s %s %s", e.Manager, e.Operation, e.Subresource, e.FieldsV1.Raw))
			}
			return strings.Join(out, "; ")
		}
		const publisher = `kube-controller-manager Update  {"f:data":{".":{},"f:ca.crt":{}},"f:metadata":{"f:annotations":{".":{},"f:kubernetes.io/description":{}}}}`
		if got := managedBy(first); got != publisher {
			t.Errorf("kube-root-ca.crt managed as\n%s\nwant\n%s", got, publisher)
		}
		if err := cms.Delete(ctx, "kube-root-ca.crt", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 30*time.Second, "kube-root-ca.crt made again", func() (bool, error) {
			cm, err := cms.Get(ctx, "kube-root-ca.crt", metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return false, nil
			}
			return err == nil && cm.UID != first.UID, err
		})
		if _, err := cms.Update(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kube-root-ca.crt"}, Data: map[string]string{"ca.crt": ""}}, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		var back *corev1.ConfigMap
		waitFor(t, 30*time.Second, "kube-root-ca.crt put back", func() (bool, error) {
			cm, err := cms.Get(ctx, "kube-root-ca.crt", metav1.GetOptions{})
			back = cm
			return err == nil && cm.Data["ca.crt"] == string(ca), err
		})
		// The client that emptied it owns data.ca.crt no more: the
		// publisher's update took it back, and put the annotation back.
		if got := managedBy(back); !strings.Contains(got, publisher) {
			t.Errorf("kube-root-ca.crt put back, managed as\n%s\nwant the publisher's entry %s", got, publisher)
		}
	})

	t.Run("extension-apiserver-authentication", func(t *testing.T) {
		// kube-apiserver's cluster-authentication-info controller publishes
		// its client CA for extension API servers and webhooks that
		// delegate authentication (k8s.io/apiserver's delegating
		// authenticator fails to start without it), kept as upstream
		// keeps it.
		ctx := testContext(t, 90*time.Second)
		cms := srv.Client.CoreV1().ConfigMaps("kube-system")
		const authInfo = "extension-apiserver-authentication"
		var first *corev1.ConfigMap
		waitFor(t, 30*time.Second, authInfo, func() (bool, error) {
			cm, err := cms.Get(ctx, authInfo, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return false, nil
			}
			first = cm
			return err == nil, err
		})
		if got := first.Data["client-ca-file"]; got != string(srv.Config.CAData) {
			t.Errorf("client-ca-file %q, want the kubeconfig's CA", got)
		}
		if len(first.ManagedFields) != 1 || first.ManagedFields[0].Manager != "kube-apiserver" || string(first.ManagedFields[0].FieldsV1.Raw) != `{"f:data":{".":{},"f:client-ca-file":{}}}` {
			t.Errorf("managedFields %+v", first.ManagedFields)
		}
		first.Data["client-ca-file"] = ""
		if _, err := cms.Update(ctx, first, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 30*time.Second, authInfo+" put back", func() (bool, error) {
			cm, err := cms.Get(ctx, authInfo, metav1.GetOptions{})
			return err == nil && cm.Data["client-ca-file"] == string(srv.Config.CAData), err
		})
		if err := cms.Delete(ctx, authInfo, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 30*time.Second, authInfo+" made again", func() (bool, error) {
			cm, err := cms.Get(ctx, authInfo, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return false, nil
			}
			return err == nil && cm.UID != first.UID, err
		})
	})

	t.Run("unconditional update", func(t *testing.T) {
		// ConfigMaps, like most built-ins, may be replaced without a
		// resourceVersion: the last write wins, as upstream's do.
		ctx := testContext(t, 30*time.Second)
		cms := srv.Client.CoreV1().ConfigMaps("default")
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "last-write"}, Data: map[string]string{"v": "1"}}
		if _, err := cms.Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		cm.Data["v"] = "2"
		got, err := cms.Update(ctx, cm, metav1.UpdateOptions{})
		if err != nil || got.Data["v"] != "2" || got.ResourceVersion == "" {
			t.Fatalf("a PUT without resourceVersion: %v, %+v", err, got)
		}
	})

	t.Run("kubectl create and get", func(t *testing.T) {
		cert, key := writeKeyPair(t)
		for _, args := range [][]string{
			{"create", "configmap", "settings", "--from-literal=color=blue", "--from-literal=size=2"},
			{"create", "secret", "generic", "login", "--from-literal=password=hunter2"},
			{"create", "secret", "tls", "serving", "--cert", cert, "--key", key},
		} {
			kubectl(t, srv, append(args, "-n", ns)...)
		}
		out := kubectl(t, srv, "get", "configmaps,secrets,sa", "-n", ns)
		// Three tables, one a resource, each with its header.
		var headers, rows [][]string
		for _, r := range table(t, out) {
			if r[0] == "NAME" {
				headers = append(headers, r)
			} else {
				rows = append(rows, r[:len(r)-1]) // less the age
			}
		}
		wantHeaders := [][]string{{"NAME", "DATA", "AGE"}, {"NAME", "TYPE", "DATA", "AGE"}, {"NAME", "AGE"}}
		// The namespace's own kube-root-ca.crt and default
		// ServiceAccount, which the first subtests waited for, are listed
		// too, as on a cluster.
		wantRows := [][]string{
			{"configmap/kube-root-ca.crt", "1"},
			{"configmap/settings", "2"},
			{"secret/login", "Opaque", "1"},
			{"secret/serving", "kubernetes.io/tls", "2"},
			{"serviceaccount/default"},
		}
		if !slices.EqualFunc(headers, wantHeaders, slices.Equal) || !slices.EqualFunc(rows, wantRows, slices.Equal) {
			t.Errorf("kubectl get configmaps,secrets,sa printed:\n%s\nwant headers %q and rows %q", out, wantHeaders, wantRows)
		}
		if out := kubectl(t, srv, "get", "secrets", "-n", ns, "--field-selector", "type=kubernetes.io/tls", "-o", "name"); strings.TrimSpace(out) != "secret/serving" {
			t.Errorf("secrets of type kubernetes.io/tls: %q", out)
		}
	})

	t.Run("lease", func(t *testing.T) {
		ctx := testContext(t, 60*time.Second)
		leases := srv.Client.CoordinationV1().Leases(ns)
		now := metav1.NewMicroTime(time.Now())
		l, err := leases.Create(ctx, &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: "leader"},
			Spec: coordinationv1.LeaseSpec{
				HolderIdentity: ptr("a"), LeaseDurationSeconds: ptr[int32](15),
				AcquireTime: &now, RenewTime: &now,
			},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		later := metav1.NewMicroTime(time.Now().Add(time.Second).Truncate(time.Microsecond)) // as serialized
		l.Spec.HolderIdentity, l.Spec.RenewTime, l.Spec.LeaseTransitions = ptr("b"), &later, ptr[int32](1)
		if _, err := leases.Update(ctx, l, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		got, err := leases.Get(ctx, "leader", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if *got.Spec.HolderIdentity != "b" || *got.Spec.LeaseTransitions != 1 || !got.Spec.RenewTime.Equal(&later) {
			t.Errorf("renewed lease: %+v", got.Spec)
		}
		if out := kubectl(t, srv, "get", "lease", "leader", "-n", ns); !slices.Equal(table(t, out)[0], []string{"NAME", "HOLDER", "AGE"}) ||
			findRow(table(t, out), "leader")[1] != "b" {
			t.Errorf("kubectl get lease:\n%s", out)
		}
	})

	t.Run("events by field selector", func(t *testing.T) {
		ctx := testContext(t, 60*time.Second)
		events := srv.Client.CoreV1().Events(ns)
		for _, e := range []struct{ name, object, typ string }{
			{"web.1", "web", corev1.EventTypeNormal},
			{"db.1", "db", corev1.EventTypeWarning},
		} {
			_, err := events.Create(ctx, &corev1.Event{
				ObjectMeta:     metav1.ObjectMeta{Name: e.name},
				InvolvedObject: corev1.ObjectReference{Kind: "ConfigMap", Namespace: ns, Name: e.object},
				Reason:         "Tested", Message: "about " + e.object, Type: e.typ,
				Source:         corev1.EventSource{Component: "e2e"},
				FirstTimestamp: metav1.Now(), LastTimestamp: metav1.Now(), Count: 1,
			}, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
		}
		out := kubectl(t, srv, "get", "events", "-n", ns, "--field-selector", "involvedObject.name=db")
		rows := table(t, out)
		if !slices.Equal(rows[0], []string{"LAST", "SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"}) || len(rows) != 2 ||
			!slices.Equal(rows[1][1:], []string{"Warning", "Tested", "configmap/db", "about", "db"}) {
			t.Errorf("kubectl get events --field-selector involvedObject.name=db:\n%s", out)
		}
		list, err := events.List(ctx, metav1.ListOptions{FieldSelector: "source=e2e,type=Normal,involvedObject.kind=ConfigMap"})
		if err != nil || len(list.Items) != 1 || list.Items[0].Name != "web.1" {
			t.Errorf("events of source e2e and type Normal: %v %v", list, err)
		}
	})

	t.Run("bad input", func(t *testing.T) {
		ctx := testContext(t, 60*time.Second)
		core := srv.Client.CoreV1()
		for _, c := range []struct {
			name, want string
			create     func() error
			get        func() error
		}{
			{"bad-key", `Secret "bad-key" is invalid: data[a b]: Invalid value: "a b": a valid config key must consist of alphanumeric characters`,
				func() error {
					_, err := core.Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "bad-key"}, StringData: map[string]string{"a b": "c"}}, metav1.CreateOptions{})
					return err
				},
				func() error { _, err := core.Secrets(ns).Get(ctx, "bad-key", metav1.GetOptions{}); return err }},
			{"too-big", `ConfigMap "too-big" is invalid: []: Too long: may not be more than 1048576 bytes`,
				func() error {
					_, err := core.ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "too-big"}, Data: map[string]string{"a": strings.Repeat("x", 1<<20+1)}}, metav1.CreateOptions{})
					return err
				},
				func() error { _, err := core.ConfigMaps(ns).Get(ctx, "too-big", metav1.GetOptions{}); return err }},
			{"negative", `Lease.coordination.k8s.io "negative" is invalid: spec.leaseDurationSeconds: Invalid value: -1: must be greater than 0`,
				func() error {
					_, err := srv.Client.CoordinationV1().Leases(ns).Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "negative"}, Spec: coordinationv1.LeaseSpec{LeaseDurationSeconds: ptr[int32](-1)}}, metav1.CreateOptions{})
					return err
				},
				func() error {
					_, err := srv.Client.CoordinationV1().Leases(ns).Get(ctx, "negative", metav1.GetOptions{})
					return err
				}},
		} {
			err := c.create()
			if !apierrors.IsInvalid(err) || !strings.HasPrefix(err.Error(), c.want) {
				t.Errorf("%s: %v, want a 422 starting %q", c.name, err, c.want)
			}
			if err := c.get(); !apierrors.IsNotFound(err) {
				t.Errorf("%s: stored after all (%v)", c.name, err)
			}
		}
	})

	t.Run("stringData and immutable", func(t *testing.T) {
		ctx := testContext(t, 60*time.Second)
		secrets := srv.Client.CoreV1().Secrets(ns)
		if _, err := secrets.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "written"}, StringData: map[string]string{"token": "abc"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		got, err := secrets.Get(ctx, "written", metav1.GetOptions{})
		if err != nil || string(got.Data["token"]) != "abc" || got.StringData != nil || got.Type != corev1.SecretTypeOpaque {
			t.Errorf("secret written with stringData reads back as %+v (%v)", got, err)
		}
		cms := srv.Client.CoreV1().ConfigMaps("default")
		cm, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "frozen"}, Immutable: ptr(true), Data: map[string]string{"a": "b"}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cm.Data["a"] = "c"
		const want = "ConfigMap \"frozen\" is invalid: data: Forbidden: field is immutable when `immutable` is set"
		if _, err := cms.Update(ctx, cm, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) || err.Error() != want {
			t.Errorf("changing an immutable ConfigMap: %v, want %q", err, want)
		}
	})

	t.Run("explain", func(t *testing.T) {
		out := kubectl(t, srv, "explain", "configmap.data")
		if !strings.Contains(out, "FIELD: data <map[string]string>") || !strings.Contains(out, "Data contains the configuration data.") {
			t.Errorf("kubectl explain configmap.data:\n%s", out)
		}
	})
}

// writeKeyPair writes a self-signed certificate and its key, PEM-encoded,
// for kubectl create secret tls, and returns their paths.
func writeKeyPair(t *testing.T) (cert, key string) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "e2e"}, NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cert, key = filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	for path, block := range map[string]*pem.Block{cert: {Type: "CERTIFICATE", Bytes: der}, key: {Type: "EC PRIVATE KEY", Bytes: keyDER}} {
		if err := os.WriteFile(path, pem.EncodeToMemory(block), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return cert, key
}
