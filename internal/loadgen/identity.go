package loadgen

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/crdserver/crdserver/internal/certs"
)

// The load generator acts as users other than the admin of the kubeconfig
// (Config.AsUser, and the two users of the "fairness" workload) with client
// certificates it mints from the server's CA, read from the data
// directory. Never in system:masters: that group bypasses the fair queues
// and authorization, and so would measure neither.

// DefaultBenchGroup is the group of the users the load generator makes up
// when none is given.
const DefaultBenchGroup = "crdserver:bench"

var clusterRoleBindingsGVR = schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterrolebindings"}

// asUser is admin's configuration acting as user in groups instead, with a
// client certificate minted from the CA under dataDir/pki.
func asUser(admin *rest.Config, dataDir, user string, groups []string) (*rest.Config, error) {
	certPEM, keyPEM, err := certs.IssueClient(filepath.Join(dataDir, "pki"), user, groups)
	if err != nil {
		return nil, fmt.Errorf("acting as %s: %w (is --data-dir the server's?)", user, err)
	}
	c := rest.AnonymousClientConfig(admin) // keeps the server and its CA, drops every credential
	c.CertData, c.KeyData = certPEM, keyPEM
	return c, nil
}

// grant binds groups (or, without groups, user) to cluster-admin with a
// ClusterRoleBinding named name when the server serves RBAC, so that the
// run works where RBAC decides; it returns the function that removes the
// binding again (nil when it made none). A binding of that name that
// exists already is used and kept.
func grant(ctx context.Context, admin *rest.Config, name, user string, groups []string) (undo func(context.Context) error, err error) {
	client, err := dynamic.NewForConfig(admin)
	if err != nil {
		return nil, fmt.Errorf("creating client: %w", err)
	}
	res := client.Resource(clusterRoleBindingsGVR)
	// A list of one tells whether RBAC is served without a discovery
	// client, which would link every built-in API type into the binary.
	if _, err := res.List(ctx, metav1.ListOptions{Limit: 1}); apierrors.IsNotFound(err) {
		return nil, nil // no RBAC: everyone authenticated may do everything
	} else if err != nil {
		return nil, fmt.Errorf("discovering RBAC: %w", err)
	}
	var subjects []any
	for _, g := range groups {
		subjects = append(subjects, map[string]any{"kind": "Group", "apiGroup": "rbac.authorization.k8s.io", "name": g})
	}
	if len(subjects) == 0 {
		subjects = append(subjects, map[string]any{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": user})
	}
	crb := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "rbac.authorization.k8s.io/v1",
		"kind":       "ClusterRoleBinding",
		"metadata":   map[string]any{"name": name},
		"roleRef":    map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
		"subjects":   subjects,
	}}
	if _, err := res.Create(ctx, crb, metav1.CreateOptions{}); apierrors.IsAlreadyExists(err) {
		return nil, nil
	} else if err != nil {
		return nil, fmt.Errorf("binding %v to cluster-admin: %w", subjects, err)
	}
	return func(ctx context.Context) error {
		err := res.Delete(ctx, name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting ClusterRoleBinding %s: %w", name, err)
		}
		return nil
	}, nil
}

// waitAllowed waits until cfg's user may list namespaces: RBAC decisions
// follow a new binding a moment later.
func waitAllowed(ctx context.Context, cfg *rest.Config) error {
	c, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return err
	}
	var last int
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, cfg.Host+"/api/v1/namespaces?limit=1", nil)
		if err != nil {
			return false, err
		}
		resp, err := c.Do(req)
		if err != nil {
			return false, err
		}
		resp.Body.Close()
		last = resp.StatusCode
		return last == http.StatusOK, nil
	})
	if err != nil {
		return errors.Join(fmt.Errorf("the bench user is not allowed to list namespaces (last answer %d)", last), err)
	}
	return nil
}
