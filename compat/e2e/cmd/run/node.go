package main

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// suiteNodeName is the Node the runner registers before the suite.
const suiteNodeName = "e2e-node-1"

// suiteNode is a Node as a kubelet first registers it: its labels,
// capacity and system info, and no conditions yet. It has no addresses,
// so that nodes/proxy answers alike on both servers (kube-apiserver's
// 500 "no preferred addresses found") instead of dialing a kubelet. Neither
// server runs a kubelet or a node controller, so it never turns Ready
// and keeps the not-ready taint kube-apiserver's admission (and
// crdserver's) gives it: specs that need a ready, schedulable node see
// none, as before, and those that only read nodes (Table
// transformation's "generic metadata details across all namespaces for
// nodes") find one.
func suiteNode() *corev1.Node {
	quantities := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("2"),
		corev1.ResourceMemory: resource.MustParse("4Gi"),
		corev1.ResourcePods:   resource.MustParse("110"),
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name: suiteNodeName,
			Labels: map[string]string{
				"kubernetes.io/hostname": suiteNodeName,
				"kubernetes.io/os":       "linux",
				"kubernetes.io/arch":     "amd64",
			},
		},
		Status: corev1.NodeStatus{
			Capacity:        quantities,
			Allocatable:     quantities,
			DaemonEndpoints: corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: 10250}},
			NodeInfo: corev1.NodeSystemInfo{
				OperatingSystem: "linux", Architecture: "amd64",
				KubeletVersion: "v1.37.2", ContainerRuntimeVersion: "containerd://2.0.0",
				OSImage: "e2e", KernelVersion: "6.8.0",
			},
		},
	}
}

// registerNode registers suiteNode with p, as a kubelet would, so that
// both servers start the suite with the same one Node.
func registerNode(ctx context.Context, p *process) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", p.kubeconfig)
	if err != nil {
		return err
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	_, err = client.CoreV1().Nodes().Create(ctx, suiteNode(), metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("registering node %s with %s: %w", suiteNodeName, p.name, err)
	}
	return nil
}
