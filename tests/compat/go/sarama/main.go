// The compatibility scenarios (tests/compat/scenario.py) with IBM/sarama: SyncProducer (plain,
// idempotent, transactional), ConsumerGroup, partition consumers, and ClusterAdmin.
package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/IBM/sarama"
	"minikafka.compat/check"
)

func config() *sarama.Config {
	cfg := sarama.NewConfig()
	cfg.Version = sarama.V4_0_0_0
	cfg.Producer.Return.Successes = true
	cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	cfg.Consumer.Offsets.AutoCommit.Enable = false
	return cfg
}

func create(bootstrap, topic string, partitions int32, configs map[string]*string) {
	adm, err := sarama.NewClusterAdmin([]string{bootstrap}, config())
	check.NoErr(err, "admin")
	defer adm.Close()
	check.NoErr(adm.CreateTopic(topic, &sarama.TopicDetail{NumPartitions: partitions, ReplicationFactor: 1,
		ConfigEntries: configs}, false), "create topic")
}

func produce(bootstrap, topic string, start, n int, tune func(*sarama.Config)) {
	cfg := config()
	if tune != nil {
		tune(cfg)
	}
	p, err := sarama.NewSyncProducer([]string{bootstrap}, cfg)
	check.NoErr(err, "producer")
	defer p.Close()
	msgs := make([]*sarama.ProducerMessage, 0, n)
	for i := start; i < start+n; i++ {
		msgs = append(msgs, &sarama.ProducerMessage{Topic: topic, Key: sarama.StringEncoder(fmt.Sprintf("k%d", i)),
			Value: sarama.StringEncoder(fmt.Sprintf("v%d", i))})
	}
	check.NoErr(p.SendMessages(msgs), "produce")
}

// member is one consumer of a group, collecting what it reads; its claims say what it was given.
type member struct {
	mu      sync.Mutex
	records []check.Record
	claims  int
	session sarama.ConsumerGroupSession
}

func (m *member) Setup(s sarama.ConsumerGroupSession) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.session = s
	for _, ps := range s.Claims() {
		m.claims += len(ps)
	}
	return nil
}

func (m *member) Cleanup(sarama.ConsumerGroupSession) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.claims = 0
	return nil
}

func (m *member) ConsumeClaim(s sarama.ConsumerGroupSession, c sarama.ConsumerGroupClaim) error {
	for msg := range c.Messages() {
		m.mu.Lock()
		m.records = append(m.records, check.Record{Partition: msg.Partition, Key: string(msg.Key), Value: string(msg.Value)})
		m.mu.Unlock()
		s.MarkMessage(msg, "")
	}
	return nil
}

func (m *member) count() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.records)
}

// join runs a group member until the returned stop is called (which commits what it marked).
func join(bootstrap, group, topic string) (*member, func()) {
	g, err := sarama.NewConsumerGroup([]string{bootstrap}, group, config())
	check.NoErr(err, "consumer group")
	m := &member{}
	runCtx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for runCtx.Err() == nil {
			if err := g.Consume(runCtx, []string{topic}, m); err != nil {
				return
			}
		}
	}()
	return m, func() {
		m.mu.Lock()
		if m.session != nil {
			m.session.Commit()
		}
		m.mu.Unlock()
		cancel()
		<-done
		g.Close()
	}
}

func produceConsume(bootstrap, prefix string) {
	topic := prefix + "-pc"
	create(bootstrap, topic, 3, nil)
	produce(bootstrap, topic, 0, 300, nil)
	m, stop := join(bootstrap, prefix+"-pc-g", topic)
	defer stop()
	check.Until(30*time.Second, func() bool { return m.count() >= 300 }, func() { time.Sleep(50 * time.Millisecond) })
	m.mu.Lock()
	defer m.mu.Unlock()
	check.Ordered(m.records, 300)
}

func groupResume(bootstrap, prefix string) {
	topic, group := prefix+"-gr", prefix+"-gr-g"
	create(bootstrap, topic, 2, nil)
	a, stopA := join(bootstrap, group, topic)
	b, stopB := join(bootstrap, group, topic)
	claims := func(m *member) int { m.mu.Lock(); defer m.mu.Unlock(); return m.claims }
	check.Until(60*time.Second, func() bool { return claims(a) == 1 && claims(b) == 1 },
		func() { time.Sleep(50 * time.Millisecond) })
	produce(bootstrap, topic, 0, 100, nil)
	check.Until(60*time.Second, func() bool { return a.count()+b.count() >= 100 }, func() { time.Sleep(50 * time.Millisecond) })
	check.That(a.count() > 0 && b.count() > 0 && a.count()+b.count() == 100, "members read %d and %d", a.count(), b.count())
	stopA()
	stopB()
	produce(bootstrap, topic, 100, 50, nil)
	c, stop := join(bootstrap, group, topic)
	defer stop()
	check.Until(30*time.Second, func() bool { return c.count() >= 50 }, func() { time.Sleep(50 * time.Millisecond) })
	time.Sleep(500 * time.Millisecond) // a record too many would come now
	c.mu.Lock()
	defer c.mu.Unlock()
	check.Resumed(c.records, 100, 150)
}

func idempotent(bootstrap, prefix string) {
	topic := prefix + "-idem"
	create(bootstrap, topic, 1, nil)
	produce(bootstrap, topic, 0, 200, func(cfg *sarama.Config) {
		cfg.Producer.Idempotent = true
		cfg.Producer.RequiredAcks = sarama.WaitForAll
		cfg.Net.MaxOpenRequests = 1
	})
	m, stop := join(bootstrap, prefix+"-idem-g", topic)
	defer stop()
	check.Until(30*time.Second, func() bool { return m.count() >= 200 }, func() { time.Sleep(50 * time.Millisecond) })
	m.mu.Lock()
	defer m.mu.Unlock()
	check.Ordered(m.records, 200)
}

func partitionReader(bootstrap, topic string, offset int64, readCommitted bool) (sarama.Consumer, sarama.PartitionConsumer) {
	cfg := config()
	if readCommitted {
		cfg.Consumer.IsolationLevel = sarama.ReadCommitted
	}
	c, err := sarama.NewConsumer([]string{bootstrap}, cfg)
	check.NoErr(err, "consumer")
	pc, err := c.ConsumePartition(topic, 0, offset)
	check.NoErr(err, "consume partition")
	return c, pc
}

func transactional(bootstrap, prefix string) {
	src, dst, group := prefix+"-in", prefix+"-out", prefix+"-eos-g"
	create(bootstrap, src, 1, nil)
	create(bootstrap, dst, 1, nil)
	produce(bootstrap, src, 0, 100, nil)
	cfg := config()
	cfg.Producer.Idempotent = true
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Net.MaxOpenRequests = 1
	cfg.Producer.Transaction.ID = prefix + "-txn"
	p, err := sarama.NewSyncProducer([]string{bootstrap}, cfg)
	check.NoErr(err, "transactional producer")
	defer p.Close()
	consumer, pc := partitionReader(bootstrap, src, 0, true)
	copied, batches := int64(0), 0
	for copied < 100 {
		var batch []*sarama.ConsumerMessage
		timeout := time.After(time.Second)
	collect:
		for len(batch) < 10 {
			select {
			case msg := <-pc.Messages():
				batch = append(batch, msg)
			case <-timeout:
				break collect
			}
		}
		if len(batch) == 0 {
			continue
		}
		check.NoErr(p.BeginTxn(), "begin")
		for _, msg := range batch {
			_, _, err := p.SendMessage(&sarama.ProducerMessage{Topic: dst, Key: sarama.ByteEncoder(msg.Key),
				Value: sarama.StringEncoder(strings.ToUpper(string(msg.Value)))})
			check.NoErr(err, "send")
		}
		next := batch[len(batch)-1].Offset + 1
		check.NoErr(p.AddOffsetsToTxn(map[string][]*sarama.PartitionOffsetMetadata{
			src: {{Partition: 0, Offset: next}}}, group), "add offsets")
		batches++
		if batches == 3 {
			check.NoErr(p.AbortTxn(), "abort")
			pc.Close()
			consumer.Close()
			consumer, pc = partitionReader(bootstrap, src, batch[0].Offset, true) // redo from a concrete offset
			continue
		}
		check.NoErr(p.CommitTxn(), "commit")
		copied = next
	}
	pc.Close()
	consumer.Close()
	rc, rpc := partitionReader(bootstrap, dst, sarama.OffsetOldest, true)
	defer rc.Close()
	defer rpc.Close()
	seen := map[string]bool{}
	deadline := time.After(30 * time.Second)
	quiet := time.After(24 * time.Hour)
	for {
		select {
		case msg := <-rpc.Messages():
			v := string(msg.Value)
			check.That(strings.HasPrefix(v, "V") && !seen[v], "unexpected or repeated output %s", v)
			seen[v] = true
			if len(seen) == 100 {
				quiet = time.After(time.Second) // a value too many would come now
			}
		case <-quiet:
			check.That(len(seen) == 100, "read %d output values", len(seen))
			adm, err := sarama.NewClusterAdmin([]string{bootstrap}, config())
			check.NoErr(err, "admin")
			defer adm.Close()
			offsets, err := adm.ListConsumerGroupOffsets(group, map[string][]int32{src: {0}})
			check.NoErr(err, "committed offsets")
			o := offsets.GetBlock(src, 0).Offset
			check.That(o == 100, "committed input offset %d", o)
			return
		case <-deadline:
			check.That(false, "read %d output values", len(seen))
		}
	}
}

func admin(bootstrap, prefix string) {
	topic := prefix + "-adm"
	adm, err := sarama.NewClusterAdmin([]string{bootstrap}, config())
	check.NoErr(err, "admin")
	defer adm.Close()
	v := "100000"
	check.NoErr(adm.CreateTopic(topic, &sarama.TopicDetail{NumPartitions: 2, ReplicationFactor: 1,
		ConfigEntries: map[string]*string{"retention.ms": &v}}, false), "create topic")
	retention := func() string {
		entries, err := adm.DescribeConfig(sarama.ConfigResource{Type: sarama.TopicResource, Name: topic})
		check.NoErr(err, "describe configs")
		for _, e := range entries {
			if e.Name == "retention.ms" {
				return e.Value
			}
		}
		return ""
	}
	check.That(retention() == "100000", "retention.ms not as created")
	v2 := "200000"
	check.NoErr(adm.IncrementalAlterConfig(sarama.TopicResource, topic, map[string]sarama.IncrementalAlterConfigsEntry{
		"retention.ms": {Operation: sarama.IncrementalAlterConfigsOperationSet, Value: &v2}}, false), "alter configs")
	// Kafka applies a change asynchronously: wait for it to be described.
	check.Until(10*time.Second, func() bool { return retention() == "200000" }, func() { time.Sleep(100 * time.Millisecond) })
	check.NoErr(adm.CreatePartitions(topic, 4, nil, false), "create partitions")
	cfg := config()
	cfg.Producer.Partitioner = sarama.NewManualPartitioner
	p, err := sarama.NewSyncProducer([]string{bootstrap}, cfg)
	check.NoErr(err, "producer")
	for i := 0; i < 10; i++ {
		_, _, err := p.SendMessage(&sarama.ProducerMessage{Topic: topic, Partition: 0, Value: sarama.StringEncoder(fmt.Sprintf("v%d", i))})
		check.NoErr(err, "produce")
	}
	p.Close()
	topics, err := adm.ListTopics()
	check.NoErr(err, "list topics")
	check.That(topics[topic].NumPartitions == 4, "partitions not added: %d", topics[topic].NumPartitions)
	check.NoErr(adm.DeleteRecords(topic, map[int32]int64{0: 5}), "delete records")
	_, err = adm.ListConsumerGroups()
	check.NoErr(err, "list groups")
	check.NoErr(adm.DeleteTopic(topic), "delete topic")
	check.Until(10*time.Second, func() bool {
		topics, err := adm.ListTopics()
		check.NoErr(err, "list topics")
		_, still := topics[topic]
		return !still
	}, func() { time.Sleep(100 * time.Millisecond) })
}

func main() {
	check.Main(map[string]func(string, string){"produce_consume": produceConsume, "group_resume": groupResume,
		"idempotent": idempotent, "transactional": transactional, "admin": admin})
}
