// Package envtest runs crdtest behind the API of controller-runtime's
// envtest package, so that a suite written for envtest switches to an
// in-process crdserver by changing one import: Environment has the
// fields of envtest.Environment that describe what to install (CRDs and
// webhooks) and the same Start and Stop. The fields that choose and
// download kube-apiserver and etcd binaries have no counterpart: there
// are none to choose.
package envtest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path"
	"path/filepath"
	"strconv"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/crdserver/crdserver/crdtest"
	"github.com/crdserver/crdserver/internal/certs"
)

// Environment is an in-process API server with CRDs and webhooks
// installed, as envtest.Environment is a kube-apiserver and etcd.
type Environment struct {
	// Config is the admin client configuration, set by Start.
	Config *rest.Config
	// KubeConfig is the admin kubeconfig, set by Start.
	KubeConfig []byte

	// CRDInstallOptions and the three fields after it say which CRDs to
	// install, as in envtest: both lists are installed.
	CRDInstallOptions CRDInstallOptions
	// ErrorIfCRDPathMissing makes a path of CRDDirectoryPaths (or of
	// CRDInstallOptions.Paths) that does not exist an error; by default
	// it is skipped, as envtest skips it.
	ErrorIfCRDPathMissing bool
	// CRDs are installed as they are.
	CRDs []*apiextensionsv1.CustomResourceDefinition
	// CRDDirectoryPaths are files, directories or glob patterns of CRD
	// manifests.
	CRDDirectoryPaths []string

	// WebhookInstallOptions say which webhook configurations to install,
	// pointed at a webhook server the test starts (for example
	// controller-runtime's, with the Local* fields as its host, port and
	// certificate directory).
	WebhookInstallOptions WebhookInstallOptions

	server *crdtest.Server
}

// CRDInstallOptions are envtest's CRD options that apply here.
type CRDInstallOptions struct {
	// Paths are files, directories or glob patterns of CRD manifests.
	Paths []string
	// CRDs are installed as they are.
	CRDs []*apiextensionsv1.CustomResourceDefinition
	// ErrorIfPathMissing makes a missing path an error.
	ErrorIfPathMissing bool
}

// WebhookInstallOptions are envtest's webhook options: configurations,
// from Go objects or manifests, are installed with every webhook that
// names a Service path pointed at https://LocalServingHost:LocalServingPort
// with that path, trusting LocalServingCAData.
type WebhookInstallOptions struct {
	// Paths are files or directories of webhook configuration manifests.
	Paths []string
	// MutatingWebhooks and ValidatingWebhooks are installed with these.
	MutatingWebhooks   []*admissionv1.MutatingWebhookConfiguration
	ValidatingWebhooks []*admissionv1.ValidatingWebhookConfiguration
	// IgnoreErrorIfPathMissing skips Paths that do not exist.
	IgnoreErrorIfPathMissing bool

	// LocalServingHost is the host the webhook server listens on
	// (default 127.0.0.1); LocalServingPort its port (default: a free
	// one). LocalServingHostExternalName, if set, is the host name the
	// API server calls instead.
	LocalServingHost             string
	LocalServingPort             int
	LocalServingHostExternalName string
	// LocalServingCertDir holds tls.crt and tls.key for the webhook
	// server, for a host of 127.0.0.1, ::1, localhost and the two names
	// above; Start creates it when empty and Stop removes it then.
	LocalServingCertDir string
	// LocalServingCAData is the CA of that certificate (PEM), set by Start.
	LocalServingCAData []byte

	madeCertDir bool
}

// Start starts the server, installs the CRDs (waiting until they are
// Established) and the webhook configurations, and returns the admin
// client configuration.
func (e *Environment) Start() (*rest.Config, error) {
	crds := append(append([]*apiextensionsv1.CustomResourceDefinition{}, e.CRDs...), e.CRDInstallOptions.CRDs...)
	s, err := crdtest.StartServer(context.Background(), crdtest.Options{
		CRDs:                  crds,
		CRDDirectoryPaths:     append(append([]string{}, e.CRDDirectoryPaths...), e.CRDInstallOptions.Paths...),
		IgnoreMissingCRDPaths: !e.ErrorIfCRDPathMissing && !e.CRDInstallOptions.ErrorIfPathMissing,
	})
	if err != nil {
		return nil, err
	}
	e.server = s
	if err := e.WebhookInstallOptions.install(s.Config); err != nil {
		return nil, errors.Join(err, e.Stop())
	}
	if e.KubeConfig, err = os.ReadFile(s.Kubeconfig); err != nil {
		return nil, errors.Join(fmt.Errorf("reading the kubeconfig: %w", err), e.Stop())
	}
	e.Config = rest.CopyConfig(s.Config)
	return e.Config, nil
}

// Stop stops the server and removes what Start made.
func (e *Environment) Stop() error {
	var errs []error
	if e.server != nil {
		errs = append(errs, e.server.Stop())
		e.server = nil
	}
	if o := &e.WebhookInstallOptions; o.madeCertDir {
		errs = append(errs, os.RemoveAll(o.LocalServingCertDir))
		o.LocalServingCertDir, o.madeCertDir = "", false
	}
	return errors.Join(errs...)
}

var (
	mutatingGVR   = schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "mutatingwebhookconfigurations"}
	validatingGVR = schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingwebhookconfigurations"}
)

// install reads the manifests, issues the serving certificate and
// creates the configurations.
func (o *WebhookInstallOptions) install(cfg *rest.Config) error {
	if err := o.readPaths(); err != nil {
		return err
	}
	if len(o.MutatingWebhooks) == 0 && len(o.ValidatingWebhooks) == 0 {
		return nil
	}
	if err := o.prepare(); err != nil {
		return err
	}
	hostPort := o.hostPort()
	client, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	ctx := context.Background()
	create := func(gvr schema.GroupVersionResource, obj runtime.Object, kind, name string) error {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
		if err != nil {
			return err
		}
		u := &unstructured.Unstructured{Object: m}
		u.SetAPIVersion(gvr.GroupVersion().String())
		u.SetKind(kind)
		if _, err := client.Resource(gvr).Create(ctx, u, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating %s %s: %w", kind, name, err)
		}
		return nil
	}
	for _, c := range o.MutatingWebhooks {
		c = c.DeepCopy()
		for i := range c.Webhooks {
			o.pointAt(&c.Webhooks[i].ClientConfig, hostPort)
		}
		if err := create(mutatingGVR, c, "MutatingWebhookConfiguration", c.Name); err != nil {
			return err
		}
	}
	for _, c := range o.ValidatingWebhooks {
		c = c.DeepCopy()
		for i := range c.Webhooks {
			o.pointAt(&c.Webhooks[i].ClientConfig, hostPort)
		}
		if err := create(validatingGVR, c, "ValidatingWebhookConfiguration", c.Name); err != nil {
			return err
		}
	}
	return nil
}

// pointAt sends a webhook that names a Service path to the local server.
func (o *WebhookInstallOptions) pointAt(cc *admissionv1.WebhookClientConfig, hostPort string) {
	cc.CABundle = o.LocalServingCAData
	if cc.Service != nil && cc.Service.Path != nil {
		u := "https://" + hostPort + path.Clean("/"+*cc.Service.Path)
		cc.URL, cc.Service = &u, nil
	}
}

func (o *WebhookInstallOptions) hostPort() string {
	host := o.LocalServingHostExternalName
	if host == "" {
		host = o.LocalServingHost
	}
	return net.JoinHostPort(host, strconv.Itoa(o.LocalServingPort))
}

// prepare picks the host and port and issues the certificate.
func (o *WebhookInstallOptions) prepare() error {
	if o.LocalServingHost == "" {
		o.LocalServingHost = "127.0.0.1"
	}
	if o.LocalServingPort == 0 {
		port, err := freePort(o.LocalServingHost)
		if err != nil {
			return err
		}
		o.LocalServingPort = port
	}
	if o.LocalServingCertDir == "" {
		dir, err := os.MkdirTemp("", "crdtest-webhook-certs-")
		if err != nil {
			return fmt.Errorf("webhook serving certificates: %w", err)
		}
		o.LocalServingCertDir, o.madeCertDir = dir, true
	}
	var sans []string
	for _, h := range []string{o.LocalServingHost, o.LocalServingHostExternalName} {
		if h != "" {
			sans = append(sans, h)
		}
	}
	pki, err := certs.Ensure(filepath.Join(o.LocalServingCertDir, "pki"), sans)
	if err != nil {
		return fmt.Errorf("webhook serving certificates: %w", err)
	}
	// The names controller-runtime's webhook server reads by default.
	for from, to := range map[string]string{pki.ServingCertFile: "tls.crt", pki.ServingKeyFile: "tls.key"} {
		data, err := os.ReadFile(from)
		if err == nil {
			err = os.WriteFile(filepath.Join(o.LocalServingCertDir, to), data, 0o600)
		}
		if err != nil {
			return fmt.Errorf("webhook serving certificates: %w", err)
		}
	}
	o.LocalServingCAData = pki.CAPEM
	return nil
}

// freePort asks the kernel for a free port on host. Another process may
// take it before the webhook server listens, as with envtest.
func freePort(host string) (int, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return 0, fmt.Errorf("finding a free port for webhooks: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// readPaths adds the webhook configurations of the manifests in Paths.
func (o *WebhookInstallOptions) readPaths() error {
	for _, p := range o.Paths {
		files := []string{p}
		st, err := os.Stat(p)
		switch {
		case errors.Is(err, os.ErrNotExist) && o.IgnoreErrorIfPathMissing:
			continue
		case err != nil:
			return fmt.Errorf("webhook path: %w", err)
		case st.IsDir():
			entries, err := os.ReadDir(p)
			if err != nil {
				return fmt.Errorf("webhook path: %w", err)
			}
			files = files[:0]
			for _, e := range entries {
				if ext := filepath.Ext(e.Name()); !e.IsDir() && (ext == ".yaml" || ext == ".yml" || ext == ".json") {
					files = append(files, filepath.Join(p, e.Name()))
				}
			}
		}
		for _, f := range files {
			if err := o.readFile(f); err != nil {
				return err
			}
		}
	}
	return nil
}

func (o *WebhookInstallOptions) readFile(file string) error {
	f, err := os.Open(file)
	if err != nil {
		return fmt.Errorf("webhook path: %w", err)
	}
	defer f.Close()
	dec := utilyaml.NewYAMLOrJSONDecoder(f, 4096)
	for i := 1; ; i++ {
		var u unstructured.Unstructured
		err := dec.Decode(&u.Object)
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("%s: document %d: %w", file, i, err)
		}
		var target any
		switch u.GetKind() {
		case "MutatingWebhookConfiguration":
			c := &admissionv1.MutatingWebhookConfiguration{}
			o.MutatingWebhooks, target = append(o.MutatingWebhooks, c), c
		case "ValidatingWebhookConfiguration":
			c := &admissionv1.ValidatingWebhookConfiguration{}
			o.ValidatingWebhooks, target = append(o.ValidatingWebhooks, c), c
		default:
			continue
		}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, target); err != nil {
			return fmt.Errorf("%s: document %d: %w", file, i, err)
		}
	}
}
