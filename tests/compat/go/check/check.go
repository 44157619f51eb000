// Package check holds what the Go programs of the compatibility matrix share: the scenario
// entry point and the checks every scenario ends with (tests/compat/scenario.py says what each
// scenario does).
package check

import (
	"fmt"
	"os"
	"sort"
	"strconv"
	"time"
)

// Failed ends a scenario with one line saying what did not hold.
type Failed struct{ What string }

func (f Failed) Error() string { return f.What }

// That panics with Failed when ok is false (Main turns it into exit status 1).
func That(ok bool, format string, args ...any) {
	if !ok {
		panic(Failed{fmt.Sprintf(format, args...)})
	}
}

// NoErr panics with Failed on an error.
func NoErr(err error, what string) {
	if err != nil {
		panic(Failed{what + ": " + err.Error()})
	}
}

// Record is one record as read.
type Record struct {
	Partition int32
	Key       string
	Value     string
}

// Ordered checks that records hold v0..v(n-1) once each, each key on one partition, in order.
func Ordered(records []Record, n int) {
	values := make([]int, 0, len(records))
	byKey := map[string]int32{}
	last := map[int32]int{}
	for _, r := range records {
		i, err := strconv.Atoi(r.Value[1:])
		NoErr(err, "value "+r.Value)
		values = append(values, i)
		if p, ok := byKey[r.Key]; ok {
			That(p == r.Partition, "key %s on two partitions", r.Key)
		}
		byKey[r.Key] = r.Partition
		if prev, ok := last[r.Partition]; ok {
			That(prev < i, "partition %d out of order at %s", r.Partition, r.Value)
		}
		last[r.Partition] = i
	}
	sort.Ints(values)
	That(len(values) == n, "read %d records, expected %d", len(values), n)
	for i, v := range values {
		That(v == i, "read %d records, expected v0..v%d once each", len(values), n-1)
	}
}

// Resumed checks that records hold exactly v<from>..v<to-1>: a group member resumed at the commit.
func Resumed(records []Record, from, to int) {
	values := make([]int, 0, len(records))
	for _, r := range records {
		i, err := strconv.Atoi(r.Value[1:])
		NoErr(err, "value "+r.Value)
		values = append(values, i)
	}
	sort.Ints(values)
	ok := len(values) == to-from
	for k, v := range values {
		ok = ok && v == from+k
	}
	That(ok, "did not resume at the commit: read %d records", len(values))
}

// Until calls step until done, failing after timeout.
func Until(timeout time.Duration, done func() bool, step func()) {
	end := time.Now().Add(timeout)
	for !done() {
		That(time.Now().Before(end), "timed out")
		step()
	}
}

// Main runs `<program> <scenario> <bootstrap> <prefix>` (exit 0 ok, 1 failed, 3 not supported).
func Main(scenarios map[string]func(bootstrap, prefix string)) {
	if len(os.Args) < 4 {
		fmt.Println("usage: <scenario> <bootstrap> <prefix>")
		os.Exit(2)
	}
	fn, ok := scenarios[os.Args[1]]
	if !ok {
		fmt.Printf("n/a: %s is not supported by this client\n", os.Args[1])
		os.Exit(3)
	}
	defer func() {
		if r := recover(); r != nil {
			fmt.Printf("FAILED: %v\n", r)
			os.Exit(1)
		}
	}()
	fn(os.Args[2], os.Args[3])
	fmt.Println("ok")
}
