package filters

import "net/http"

// stackReserve is the frame growStack asks for. With the frames below it
// the stack grows to the runtime's largest cached size class (16 KiB) in
// one step; with 12 KiB it went on to 32 KiB, which the runtime does not
// cache, and growing cost more.
const stackReserve = 8 << 10

// GrowStack grows the request goroutine's stack while it is still shallow.
// net/http runs each HTTP/2 request on a new goroutine whose stack starts
// at the average size of all goroutines, most of them small idle ones, so
// without this the stack doubles several times deep inside the request,
// and each doubling copies and re-adjusts every frame above it. Measured
// on gets at concurrency 16 (server CPU against the load generator's, on
// the same cores, to cancel the machine's changes of speed): ~5% less
// server CPU per get.
func GrowStack(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		growStack(0)
		next.ServeHTTP(w, r)
	})
}

// growStack needs a frame of stackReserve bytes; the index the compiler
// cannot know keeps the array, and so the frame, from being optimised
// away.
//
//go:noinline
func growStack(i int) byte {
	var pad [stackReserve]byte
	return pad[i]
}
