package memcached

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
)

// Finalizer holds a Memcached until Reconciler.Cleanup has run.
const Finalizer = "cache.example.com/cleanup"

// ConditionAvailable is the status condition the controller maintains.
const ConditionAvailable = "Available"

// Reconciler keeps one Deployment per Memcached.
type Reconciler struct {
	Client client.Client
	// Cleanup releases what a Memcached holds outside the cluster (here:
	// whatever the test records); it runs once, before the finalizer goes.
	Cleanup func(ctx context.Context, m *Memcached) error
}

// SetupWithManager registers the controller: it watches Memcacheds and
// the Deployments they own.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&Memcached{}).
		Owns(&appsv1.Deployment{}).
		Complete(r)
}

// Reconcile brings one Memcached's Deployment and status in line with its
// spec, or cleans up after it when it is being deleted.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var m Memcached
	if err := r.Client.Get(ctx, req.NamespacedName, &m); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !m.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, r.finalize(ctx, &m)
	}
	if controllerutil.AddFinalizer(&m, Finalizer) {
		if err := r.Client.Update(ctx, &m); err != nil {
			return ctrl.Result{}, fmt.Errorf("adding the finalizer: %w", err)
		}
	}
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: m.Name, Namespace: m.Namespace}}
	_, err := controllerutil.CreateOrUpdate(ctx, r.Client, dep, func() error {
		labels := map[string]string{"app": "memcached", "memcached": m.Name}
		dep.Spec.Replicas = &m.Spec.Size
		dep.Spec.Selector = &metav1.LabelSelector{MatchLabels: labels}
		dep.Spec.Template.Labels = labels
		dep.Spec.Template.Spec.Containers = []corev1.Container{{Name: "memcached", Image: "memcached:1.6"}}
		return controllerutil.SetControllerReference(&m, dep, r.Client.Scheme())
	})
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("writing the deployment: %w", err)
	}
	m.Status.Deployment = dep.Name
	meta.SetStatusCondition(&m.Status.Conditions, metav1.Condition{
		Type: ConditionAvailable, Status: metav1.ConditionTrue, Reason: "DeploymentUpToDate",
		Message:            fmt.Sprintf("deployment %s has %d replicas", dep.Name, m.Spec.Size),
		ObservedGeneration: m.Generation,
	})
	if err := r.Client.Status().Update(ctx, &m); err != nil {
		if apierrors.IsConflict(err) {
			return ctrl.Result{Requeue: true}, nil
		}
		return ctrl.Result{}, fmt.Errorf("writing the status: %w", err)
	}
	return ctrl.Result{}, nil
}

// finalize runs Cleanup and releases the finalizer; the garbage collector
// deletes the Deployment, which the Memcached owns.
func (r *Reconciler) finalize(ctx context.Context, m *Memcached) error {
	if !controllerutil.ContainsFinalizer(m, Finalizer) {
		return nil
	}
	if r.Cleanup != nil {
		if err := r.Cleanup(ctx, m); err != nil {
			return fmt.Errorf("cleaning up: %w", err)
		}
	}
	controllerutil.RemoveFinalizer(m, Finalizer)
	return r.Client.Update(ctx, m)
}
