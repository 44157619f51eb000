// The compatibility scenarios (tests/compat/scenario.py) with franz-go: kgo for producing,
// consuming and GroupTransactSession, kadm for the admin calls.
package main

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"minikafka.compat/check"
)

var ctx = context.Background()

func client(bootstrap string, opts ...kgo.Opt) *kgo.Client {
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(bootstrap)}, opts...)...)
	check.NoErr(err, "client")
	return cl
}

func create(bootstrap, topic string, partitions int32, configs map[string]*string) {
	cl := client(bootstrap)
	defer cl.Close()
	resp, err := kadm.NewClient(cl).CreateTopics(ctx, partitions, 1, configs, topic)
	check.NoErr(err, "create topic")
	check.NoErr(resp[topic].Err, "create topic")
}

func produce(bootstrap, topic string, start, n int, opts ...kgo.Opt) {
	cl := client(bootstrap, opts...)
	defer cl.Close()
	recs := make([]*kgo.Record, 0, n)
	for i := start; i < start+n; i++ {
		recs = append(recs, &kgo.Record{Topic: topic, Key: []byte(fmt.Sprintf("k%d", i)), Value: []byte(fmt.Sprintf("v%d", i))})
	}
	check.NoErr(cl.ProduceSync(ctx, recs...).FirstErr(), "produce")
}

func read(cl *kgo.Client, want int) []check.Record {
	var got []check.Record
	check.Until(30*time.Second, func() bool { return len(got) >= want }, func() {
		pctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		defer cancel()
		cl.PollFetches(pctx).EachRecord(func(r *kgo.Record) {
			got = append(got, check.Record{Partition: r.Partition, Key: string(r.Key), Value: string(r.Value)})
		})
	})
	return got
}

func consumer(bootstrap, group string, opts ...kgo.Opt) *kgo.Client {
	return client(bootstrap, append([]kgo.Opt{kgo.ConsumerGroup(group), kgo.DisableAutoCommit(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart())}, opts...)...)
}

func produceConsume(bootstrap, prefix string) {
	topic := prefix + "-pc"
	create(bootstrap, topic, 3, nil)
	produce(bootstrap, topic, 0, 300)
	c := consumer(bootstrap, prefix+"-pc-g", kgo.ConsumeTopics(topic))
	defer c.Close()
	check.Ordered(read(c, 300), 300)
}

func groupResume(bootstrap, prefix string) {
	topic, group := prefix+"-gr", prefix+"-gr-g"
	create(bootstrap, topic, 2, nil)
	// The default balancer is cooperative: callbacks name only the partitions added or taken away.
	var mu sync.Mutex
	owned := map[string]map[int32]bool{"a": {}, "b": {}}
	member := func(name string) *kgo.Client {
		change := func(add bool) func(context.Context, *kgo.Client, map[string][]int32) {
			return func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
				mu.Lock()
				defer mu.Unlock()
				for _, p := range m[topic] {
					if add {
						owned[name][p] = true
					} else {
						delete(owned[name], p)
					}
				}
			}
		}
		return consumer(bootstrap, group, kgo.ConsumeTopics(topic), kgo.OnPartitionsAssigned(change(true)),
			kgo.OnPartitionsRevoked(change(false)), kgo.OnPartitionsLost(change(false)))
	}
	a, b := member("a"), member("b")
	got := map[string]int{}
	step := func() {
		for name, c := range map[string]*kgo.Client{"a": a, "b": b} {
			pctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
			got[name] += c.PollFetches(pctx).NumRecords()
			cancel()
		}
	}
	check.Until(60*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(owned["a"]) == 1 && len(owned["b"]) == 1
	}, step)
	produce(bootstrap, topic, 0, 100)
	check.Until(60*time.Second, func() bool { return got["a"]+got["b"] >= 100 }, step)
	check.That(got["a"] > 0 && got["b"] > 0 && got["a"]+got["b"] == 100, "members read %v", got)
	for _, c := range []*kgo.Client{a, b} {
		check.NoErr(c.CommitUncommittedOffsets(ctx), "commit")
		c.Close()
	}
	produce(bootstrap, topic, 100, 50)
	c := consumer(bootstrap, group, kgo.ConsumeTopics(topic))
	defer c.Close()
	check.Resumed(read(c, 50), 100, 150)
}

func idempotent(bootstrap, prefix string) {
	topic := prefix + "-idem"
	create(bootstrap, topic, 1, nil)
	produce(bootstrap, topic, 0, 200, kgo.RequiredAcks(kgo.AllISRAcks())) // idempotent by default
	c := consumer(bootstrap, prefix+"-idem-g", kgo.ConsumeTopics(topic))
	defer c.Close()
	check.Ordered(read(c, 200), 200)
}

func transactional(bootstrap, prefix string) {
	src, dst, group := prefix+"-in", prefix+"-out", prefix+"-eos-g"
	create(bootstrap, src, 1, nil)
	create(bootstrap, dst, 1, nil)
	produce(bootstrap, src, 0, 100)
	sess, err := kgo.NewGroupTransactSession(kgo.SeedBrokers(bootstrap), kgo.TransactionalID(prefix+"-txn"),
		kgo.ConsumerGroup(group), kgo.ConsumeTopics(src), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.RequireStableFetchOffsets(), kgo.FetchMaxPartitionBytes(200))
	check.NoErr(err, "session")
	copied, batches := 0, 0
	for copied < 100 {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		fetches := sess.PollRecords(pctx, 10)
		cancel()
		records := fetches.Records()
		if len(records) == 0 {
			continue
		}
		check.NoErr(sess.Begin(), "begin")
		for _, r := range records {
			sess.Produce(ctx, &kgo.Record{Topic: dst, Key: r.Key, Value: []byte(strings.ToUpper(string(r.Value)))}, nil)
		}
		batches++
		commit := kgo.TryCommit
		if batches == 3 {
			commit = kgo.TryAbort // the session rewinds to the committed offsets
		}
		committed, err := sess.End(ctx, commit)
		check.NoErr(err, "end transaction")
		if committed {
			copied = int(records[len(records)-1].Offset) + 1
		}
	}
	sess.Close()
	reader := client(bootstrap, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{dst: {0: kgo.NewOffset().AtStart()}}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	defer reader.Close()
	records := read(reader, 100)
	pctx, cancel := context.WithTimeout(ctx, time.Second)
	reader.PollFetches(pctx).EachRecord(func(r *kgo.Record) { records = append(records, check.Record{Value: string(r.Value)}) })
	cancel()
	var values []string
	for _, r := range records {
		values = append(values, r.Value)
	}
	sort.Strings(values)
	check.That(len(values) == 100, "read %d output values", len(values))
	seen := map[string]bool{}
	for _, v := range values {
		check.That(strings.HasPrefix(v, "V") && !seen[v], "unexpected or repeated output %s", v)
		seen[v] = true
	}
	cl := client(bootstrap)
	defer cl.Close()
	offsets, err := kadm.NewClient(cl).FetchOffsets(ctx, group)
	check.NoErr(err, "fetch offsets")
	o, _ := offsets.Lookup(src, 0)
	check.That(o.At == 100, "committed input offset %d", o.At)
}

func admin(bootstrap, prefix string) {
	topic := prefix + "-adm"
	cl := client(bootstrap)
	defer cl.Close()
	adm := kadm.NewClient(cl)
	v := "100000"
	create(bootstrap, topic, 2, map[string]*string{"retention.ms": &v})
	retention := func() string {
		rc, err := adm.DescribeTopicConfigs(ctx, topic)
		check.NoErr(err, "describe configs")
		r, err := rc.On(topic, nil)
		check.NoErr(err, "describe configs")
		for _, c := range r.Configs {
			if c.Key == "retention.ms" {
				return c.MaybeValue()
			}
		}
		return ""
	}
	check.That(retention() == "100000", "retention.ms not as created")
	v2 := "200000"
	_, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: "retention.ms", Value: &v2}}, topic)
	check.NoErr(err, "alter configs")
	// Kafka applies a change asynchronously: wait for it to be described.
	check.Until(10*time.Second, func() bool { return retention() == "200000" }, func() { time.Sleep(100 * time.Millisecond) })
	_, err = adm.CreatePartitions(ctx, 2, topic)
	check.NoErr(err, "create partitions")
	p := client(bootstrap, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for i := 0; i < 10; i++ {
		check.NoErr(p.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: 0, Value: []byte(fmt.Sprintf("v%d", i))}).FirstErr(), "produce")
	}
	p.Close()
	details, err := adm.ListTopics(ctx, topic)
	check.NoErr(err, "list topics")
	check.That(len(details[topic].Partitions) == 4, "partitions not added")
	offsets := kadm.Offsets{}
	offsets.AddOffset(topic, 0, 5, -1)
	deleted, err := adm.DeleteRecords(ctx, offsets)
	check.NoErr(err, "delete records")
	d, _ := deleted.Lookup(topic, 0)
	check.NoErr(d.Err, "delete records")
	check.That(d.LowWatermark == 5, "delete records answered %d", d.LowWatermark)
	_, err = adm.ListGroups(ctx)
	check.NoErr(err, "list groups")
	_, err = adm.DeleteTopics(ctx, topic)
	check.NoErr(err, "delete topic")
	check.Until(10*time.Second, func() bool { // Kafka forgets a deleted topic asynchronously
		details, err := adm.ListTopics(ctx)
		check.NoErr(err, "list topics")
		_, still := details[topic]
		return !still
	}, func() { time.Sleep(100 * time.Millisecond) })
}

func main() {
	check.Main(map[string]func(string, string){"produce_consume": produceConsume, "group_resume": groupResume,
		"idempotent": idempotent, "transactional": transactional, "admin": admin})
}
