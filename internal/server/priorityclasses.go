package server

import (
	"context"

	schedulingv1 "k8s.io/api/scheduling/v1"

	"github.com/crdserver/crdserver/internal/builtin"
)

// ensurePriorityClasses creates upstream's system PriorityClasses where
// they are missing, retrying until it succeeds; one that exists, changed
// or not, is left alone, as upstream's kube-apiserver leaves it. Creates
// are create-if-absent, so replicas starting together agree.
func (s *Server) ensurePriorityClasses(ctx context.Context) {
	prefix := keyPrefix(s.cfg.EtcdPrefix, builtin.PriorityClasses().GroupResource())
	done := retry(ctx, s.log, "creating the system priority classes", func() error {
		for _, want := range builtin.SystemPriorityClasses() {
			want.Generation = 1
			err := writeReconciled(ctx, s.raw, prefix+want.Name, want.GroupVersionKind(), func(have *schedulingv1.PriorityClass) (*schedulingv1.PriorityClass, bool) {
				return &want, have == nil
			})
			if err != nil {
				return err
			}
		}
		return nil
	})
	s.priorityClassesEnsured.Store(done)
}
