package main

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// startKubeAPIServer starts upstream's kube-apiserver, of the Kubernetes
// release this module's e2e suite comes from, on an etcd of its own
// (test/etcdserver), as a control plane without nodes: no controller
// manager, no scheduler, no kubelet. It authenticates the runner with a
// static token in system:masters.
func startKubeAPIServer(ctx context.Context, paths paths, dir string) (*process, error) {
	apiserver, err := buildKubeAPIServer(ctx, paths)
	if err != nil {
		return nil, err
	}
	etcdBin := filepath.Join(dir, "etcdserver")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", etcdBin, "./test/etcdserver")
	cmd.Dir = paths.root
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("go build ./test/etcdserver: %w\n%s", err, out)
	}

	etcdURL := make(chan string, 1)
	etcd, err := start("etcd", etcdBin, []string{"--data-dir", filepath.Join(dir, "etcd")},
		filepath.Join(dir, "etcd.log"), func(line string) {
			if strings.HasPrefix(line, "http://") || strings.HasPrefix(line, "https://") {
				select {
				case etcdURL <- strings.TrimSpace(line):
				default:
				}
			}
		})
	if err != nil {
		return nil, err
	}
	var url string
	select {
	case url = <-etcdURL:
	case <-etcd.exited:
		return nil, fmt.Errorf("etcd exited before serving; see %s", etcd.logPath)
	case <-time.After(startTimeout):
		etcd.stop()
		return nil, fmt.Errorf("etcd did not serve within %s; see %s", startTimeout, etcd.logPath)
	}

	certDir := filepath.Join(dir, "certs")
	if err := os.MkdirAll(certDir, 0o700); err != nil {
		etcd.stop()
		return nil, err
	}
	saKey := filepath.Join(certDir, "service-account.key")
	token, err := writeCredentials(saKey, filepath.Join(certDir, "tokens.csv"))
	if err != nil {
		etcd.stop()
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		etcd.stop()
		return nil, err
	}
	p, err := start("kube-apiserver", apiserver, []string{
		"--etcd-servers=" + url,
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		// The lease reconciler refuses a loopback address; there is no
		// other apiserver to reconcile with.
		"--endpoint-reconciler-type=none",
		"--secure-port=" + strconv.Itoa(port),
		"--cert-dir=" + certDir,
		"--token-auth-file=" + filepath.Join(certDir, "tokens.csv"),
		"--authorization-mode=RBAC",
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + saKey,
		"--service-account-signing-key-file=" + saKey,
		"--service-cluster-ip-range=10.0.0.0/24",
		// As kubeadm and most distributions start it: crdserver allows
		// privileged containers.
		"--allow-privileged=true",
	}, filepath.Join(dir, "kube-apiserver.log"), nil)
	if err != nil {
		etcd.stop()
		return nil, err
	}
	p.deps = []*process{etcd}
	p.url = "https://127.0.0.1:" + strconv.Itoa(port)
	p.kubeconfig = filepath.Join(dir, "admin.kubeconfig")
	// The serving certificate is self-signed; the runner checks nothing
	// about TLS, only the API.
	kubeconfig := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: kube-apiserver
  cluster:
    server: %s
    insecure-skip-tls-verify: true
users:
- name: admin
  user:
    token: %s
contexts:
- name: admin
  context: {cluster: kube-apiserver, user: admin}
current-context: admin
`, p.url, token)
	if err := os.WriteFile(p.kubeconfig, []byte(kubeconfig), 0o600); err != nil {
		p.stop()
		return nil, err
	}
	if err := waitReady(ctx, p); err != nil {
		p.stop()
		return nil, err
	}
	return p, nil
}

// writeCredentials writes a service account signing key and a static
// token file with one admin (system:masters) token, which it returns. The
// admin has no uid, as crdserver's (a client certificate's) has none:
// kubectl auth whoami prints the same user on both.
func writeCredentials(keyPath, tokensPath string) (string, error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return "", err
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(keyPath, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		return "", err
	}
	b := make([]byte, 16)
	rand.Read(b)
	token := hex.EncodeToString(b)
	line := token + `,admin,,"system:masters"` + "\n"
	return token, os.WriteFile(tokensPath, []byte(line), 0o600)
}

// freePort is a TCP port on 127.0.0.1 that was free a moment ago;
// kube-apiserver, unlike crdserver, cannot pick one and say which.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
