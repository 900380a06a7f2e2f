package handler_test

import "time"

// sleep paces polling of asynchronous server work (the namespace controller).
func sleep() { time.Sleep(20 * time.Millisecond) }
