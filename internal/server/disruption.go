package server

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"strings"

	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/crdserver/crdserver/internal/apply"
	"github.com/crdserver/crdserver/internal/builtin"
	"github.com/crdserver/crdserver/internal/controllers"
	"github.com/crdserver/crdserver/internal/handler"
)

// disruptionStatus keeps PodDisruptionBudgets' status as upstream's
// disruption controller keeps a budget's that selects no pods
// (controllers.DisruptionStatus): their observedGeneration follows their
// generation, which clients wait for before relying on a budget.
type disruptionStatus struct {
	s      *Server
	gr     schema.GroupResource
	fields *apply.Manager // the budgets' status field manager
}

func newDisruptionStatus(s *Server) *disruptionStatus {
	def := builtin.PodDisruptionBudgets()
	return &disruptionStatus{s: s, gr: def.GroupResource(), fields: statusFieldManager(def, "v1")}
}

// sync brings the status of the budget named namespace/name up to date,
// with a compare-and-swap at the revision read, recorded in its
// managedFields as kube-controller-manager's, whose controller upstream
// writes it.
func (d *disruptionStatus) sync(ctx context.Context, key string) error {
	ns, name, _ := strings.Cut(key, "/")
	var pdb policyv1.PodDisruptionBudget
	own, found, err := d.s.readOwnStatusIn(ctx, d.gr, ns, name, &pdb)
	if err != nil || !found {
		return err
	}
	st, changed := controllers.DisruptionStatus(&pdb, metav1.Now())
	if !changed {
		return nil
	}
	b, err := json.Marshal(st)
	if err != nil {
		return err
	}
	want, err := handler.DecodeStored(b) // numbers as the stored object's
	if err != nil {
		return fmt.Errorf("encoding the status of PodDisruptionBudget %s: %w", key, err)
	}
	return own.writeStatusAs(ctx, d.fields, builtin.ControllerManager, func(status map[string]any) {
		clear(status)
		maps.Copy(status, want)
	})
}
