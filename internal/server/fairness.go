package server

import "github.com/crdserver/crdserver/internal/fairness"

// fairQueues are the fair queues of --max-requests-inflight seats, which
// subsume upstream's max-in-flight limit as its priority and fairness does:
// the flag sets the seats shared among users, and requests beyond them wait
// in their user's queue instead of being refused at once. Negative seats
// mean no limit, hence no queues.
func fairQueues(seats int) *fairness.Queues {
	if seats < 0 {
		return nil
	}
	return fairness.New(seats, fairness.DefaultQueueLength)
}
