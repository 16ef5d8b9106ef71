// The adapter process of apache/rocketmq-client-go v2 (the tag conformance/runner/clients/go.py pins): adapter
// protocol v1 (conformance/runner/clients/ADAPTER.md) on stdin/stdout.
//
// Built by conformance/runner/clients/go.py (GOPATH mode, GOPROXY=off: the client from the pinned copy in the
// repository, its dependencies from Debian's golang-*-dev sources); run as `rmqspec-go-adapter`. One push consumer
// per process. Its listener writes one `delivery` line per call and blocks until the harness's `outcome` for it
// arrives (at most outcomeTimeout, then RECONSUME_LATER / SUSPEND_CURRENT_QUEUE_A_MOMENT and an `error` line).
//
// Statuses: CONSUME_SUCCESS / SUCCESS, RECONSUME_LATER, SUSPEND_CURRENT_QUEUE_A_MOMENT, COMMIT, ROLLBACK return the
// client's ConsumeResult of that name. A Go listener has no exception and no null: EXCEPTION panics inside the
// listener (Go's unwinding failure), NULL returns an error beside the zero ConsumeResult (what `return 0, err` or a
// bare `var r consumer.ConsumeResult; return r, err` hands the client). The client's own PanicHandler hook
// (primitive.PanicHandler) is left as the client ships it (nil). delayLevel sets the concurrently context,
// autoCommit and suspendMillis the orderly one.
//
// stdout carries protocol lines only: os.Stdout is pointed at stderr before the client is created, and the client's
// log (rlog, logrus) goes to stderr or, with the start's logDir, to a file there.
package main

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/rlog"
)

// Set at build time (-ldflags -X main.clientVersion=...): the tag the build step compiled.
var clientVersion = "unknown"
var clientCommit = "unknown"

const outcomeTimeout = 60 * time.Second

var configKeys = map[string]bool{"maxReconsumeTimes": true, "consumeMessageBatchMaxSize": true,
	"pullBatchSize": true, "consumeTimeout": true, "suspendCurrentQueueTimeMillis": true, "pullInterval": true}

type adapter struct {
	out      *bufio.Writer
	outLock  sync.Mutex
	next     int
	waiting  map[int]chan map[string]interface{}
	released map[int]bool
	lock     sync.Mutex
	release  string
	stopping bool
}

func (a *adapter) send(line map[string]interface{}) {
	data, err := json.Marshal(line)
	if err != nil {
		data, _ = json.Marshal(map[string]interface{}{"type": "error", "message": err.Error()})
	}
	a.outLock.Lock()
	defer a.outLock.Unlock()
	a.out.Write(data)
	a.out.WriteByte('\n')
	a.out.Flush()
}

func (a *adapter) sendError(message string) {
	a.send(map[string]interface{}{"type": "error", "message": message})
}

func toRecord(msg *primitive.MessageExt, mq primitive.MessageQueue) map[string]interface{} {
	queueID := mq.QueueId
	if msg.Queue != nil {
		queueID = msg.Queue.QueueId
	}
	properties := map[string]string{}
	for key, value := range msg.GetProperties() {
		properties[key] = value
	}
	return map[string]interface{}{"msgId": msg.MsgId, "topic": msg.Topic, "queueId": queueID,
		"queueOffset": msg.QueueOffset, "commitLogOffset": msg.CommitLogOffset, "reconsumeTimes": msg.ReconsumeTimes,
		"bornTimestamp": msg.BornTimestamp, "storeTimestamp": msg.StoreTimestamp, "tags": msg.GetTags(),
		"bodyBase64": base64.StdEncoding.EncodeToString(msg.Body), "properties": properties}
}

// deliver writes delivery K and waits for its outcome (or a release at stop, or the time limit).
func (a *adapter) deliver(msgs []*primitive.MessageExt, mq primitive.MessageQueue,
	view map[string]interface{}) map[string]interface{} {
	a.lock.Lock()
	a.next++
	number := a.next
	slot := make(chan map[string]interface{}, 1)
	a.waiting[number] = slot
	stopping := a.stopping
	a.lock.Unlock()
	records := make([]map[string]interface{}, 0, len(msgs))
	for _, msg := range msgs {
		records = append(records, toRecord(msg, mq))
	}
	view["queue"] = map[string]interface{}{"topic": mq.Topic, "brokerName": mq.BrokerName, "queueId": mq.QueueId}
	a.send(map[string]interface{}{"type": "delivery", "delivery": number, "thread": "goroutine",
		"messages": records, "context": view})
	if stopping {
		a.releaseOne(number)
	}
	defer func() {
		a.lock.Lock()
		delete(a.waiting, number)
		a.lock.Unlock()
	}()
	select {
	case outcome := <-slot:
		return outcome
	case <-time.After(outcomeTimeout):
		a.sendError(fmt.Sprintf("no outcome for delivery %d in %v", number, outcomeTimeout))
		return map[string]interface{}{"status": a.release}
	}
}

// releaseOne answers delivery K itself at stop so that the client's shutdown is not held by a blocked listener.
func (a *adapter) releaseOne(number int) {
	a.lock.Lock()
	slot, ok := a.waiting[number]
	if !ok || a.released[number] {
		a.lock.Unlock()
		return
	}
	a.released[number] = true
	a.lock.Unlock()
	select {
	case slot <- map[string]interface{}{"status": a.release}:
		a.send(map[string]interface{}{"type": "released", "delivery": number, "status": a.release})
	default: // the harness's outcome came first
	}
}

func (a *adapter) releaseAll() {
	a.lock.Lock()
	a.stopping = true
	numbers := make([]int, 0, len(a.waiting))
	for number := range a.waiting {
		numbers = append(numbers, number)
	}
	a.lock.Unlock()
	for _, number := range numbers {
		a.releaseOne(number)
	}
}

func (a *adapter) answer(outcome map[string]interface{}) {
	number, ok := outcome["delivery"].(float64)
	a.lock.Lock()
	slot, found := a.waiting[int(number)]
	wasReleased := a.released[int(number)]
	a.lock.Unlock()
	if !ok || (!found && !wasReleased) {
		a.sendError(fmt.Sprintf("outcome for unknown delivery %v", outcome["delivery"]))
		return
	}
	if found {
		select {
		case slot <- outcome:
		default:
		}
	}
}

var results = map[string]consumer.ConsumeResult{"CONSUME_SUCCESS": consumer.ConsumeSuccess,
	"SUCCESS": consumer.ConsumeSuccess, "RECONSUME_LATER": consumer.ConsumeRetryLater,
	"SUSPEND_CURRENT_QUEUE_A_MOMENT": consumer.SuspendCurrentQueueAMoment, "COMMIT": consumer.Commit,
	"ROLLBACK": consumer.Rollback}

// toResult: the listener's return for the outcome; EXCEPTION panics, NULL is an error with the zero result.
func (a *adapter) toResult(outcome map[string]interface{}) (consumer.ConsumeResult, error) {
	status, _ := outcome["status"].(string)
	if status == "EXCEPTION" {
		panic(fmt.Sprintf("outcome script: delivery %v panics", outcome["delivery"]))
	}
	if status == "NULL" {
		var zero consumer.ConsumeResult
		return zero, errors.New("outcome script: the listener returns an error and no result")
	}
	result, ok := results[status]
	if !ok {
		a.sendError("status " + status + " has no ConsumeResult")
		return consumer.ConsumeRetryLater, errors.New("no such status " + status)
	}
	return result, nil
}

func (a *adapter) listener(ctx context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
	view := map[string]interface{}{}
	var mq primitive.MessageQueue
	if concurrently, ok := primitive.GetConcurrentlyCtx(ctx); ok {
		mq = concurrently.MQ
		view["delayLevelWhenNextConsume"] = concurrently.DelayLevelWhenNextConsume
		outcome := a.deliver(msgs, mq, view)
		if level, ok := outcome["delayLevel"].(float64); ok {
			concurrently.DelayLevelWhenNextConsume = int(level)
		}
		if index, ok := outcome["ackIndex"].(float64); ok {
			concurrently.AckIndex = int32(index)
		}
		return a.toResult(outcome)
	}
	orderly, _ := primitive.GetOrderlyCtx(ctx)
	if orderly != nil {
		mq = orderly.MQ
		view["autoCommit"] = orderly.AutoCommit
		view["suspendCurrentQueueTimeMillis"] = orderly.SuspendCurrentQueueTimeMillis
	}
	outcome := a.deliver(msgs, mq, view)
	if orderly != nil {
		if auto, ok := outcome["autoCommit"].(bool); ok {
			orderly.AutoCommit = auto
		}
		if millis, ok := outcome["suspendMillis"].(float64); ok {
			orderly.SuspendCurrentQueueTimeMillis = int(millis)
		}
	}
	return a.toResult(outcome)
}

func getInt(config map[string]interface{}, key string) (int, bool) {
	value, ok := config[key].(float64)
	return int(value), ok
}

// options: the client's options for the start request; the config keys it did not apply.
func options(request map[string]interface{}) ([]consumer.Option, []string) {
	instance, _ := request["instance"].(string)
	if instance == "" {
		instance = "conformance"
	}
	group, _ := request["group"].(string)
	namesrv, _ := request["namesrv"].(string)
	model := consumer.Clustering
	if request["model"] == "broadcasting" {
		model = consumer.BroadCasting
	}
	opts := []consumer.Option{consumer.WithGroupName(group), consumer.WithInstance(instance),
		consumer.WithNsResolver(primitive.NewPassthroughResolver(strings.Split(namesrv, ";"))),
		consumer.WithConsumerModel(model), consumer.WithConsumerOrder(request["mode"] == "orderly")}
	config, _ := request["config"].(map[string]interface{})
	if value, ok := getInt(config, "maxReconsumeTimes"); ok {
		opts = append(opts, consumer.WithMaxReconsumeTimes(int32(value)))
	}
	if value, ok := getInt(config, "consumeMessageBatchMaxSize"); ok {
		opts = append(opts, consumer.WithConsumeMessageBatchMaxSize(value))
	}
	if value, ok := getInt(config, "pullBatchSize"); ok {
		opts = append(opts, consumer.WithPullBatchSize(int32(value)))
	}
	if value, ok := getInt(config, "consumeTimeout"); ok {
		opts = append(opts, consumer.WithConsumeTimeout(time.Duration(value)*time.Minute))
	}
	if value, ok := getInt(config, "suspendCurrentQueueTimeMillis"); ok {
		opts = append(opts, consumer.WithSuspendCurrentQueueTimeMillis(time.Duration(value)*time.Millisecond))
	}
	if value, ok := getInt(config, "pullInterval"); ok {
		opts = append(opts, consumer.WithPullInterval(time.Duration(value)*time.Millisecond))
	}
	ignored := []string{}
	for key := range config {
		if !configKeys[key] {
			ignored = append(ignored, key)
		}
	}
	sort.Strings(ignored)
	return opts, ignored
}

type pushConsumer interface {
	Start() error
	Shutdown() error
	Subscribe(topic string, selector consumer.MessageSelector,
		f func(context.Context, ...*primitive.MessageExt) (consumer.ConsumeResult, error)) error
}

func (a *adapter) start(request map[string]interface{}) (pushConsumer, []string, error) {
	if logDir, ok := request["logDir"].(string); ok && logDir != "" {
		instance, _ := request["instance"].(string)
		rlog.SetOutputPath(filepath.Join(logDir, instance+"-rocketmq-client-go.log"))
	}
	rlog.SetLogLevel("info")
	if request["mode"] == "orderly" {
		a.release = "SUSPEND_CURRENT_QUEUE_A_MOMENT"
	}
	opts, ignored := options(request)
	client, err := consumer.NewPushConsumer(opts...)
	if err != nil {
		return nil, nil, err
	}
	topic, _ := request["topic"].(string)
	expression, _ := request["expression"].(string)
	if expression == "" {
		expression = "*"
	}
	selector := consumer.MessageSelector{Type: consumer.TAG, Expression: expression}
	if err := client.Subscribe(topic, selector, a.listener); err != nil {
		return nil, nil, err
	}
	if err := client.Start(); err != nil {
		return nil, nil, err
	}
	return client, ignored, nil
}

func (a *adapter) serve(in *bufio.Reader) {
	var client pushConsumer
	for {
		text, err := in.ReadString('\n')
		if strings.TrimSpace(text) != "" {
			var request map[string]interface{}
			if jsonErr := json.Unmarshal([]byte(text), &request); jsonErr != nil {
				a.sendError("not JSON: " + jsonErr.Error())
			} else if kind := request["type"]; kind == "start" && client == nil {
				started, ignored, startErr := a.start(request)
				if startErr != nil {
					a.sendError("start failed: " + startErr.Error())
				} else {
					client = started
					a.send(map[string]interface{}{"type": "ready", "protocol": 1, "ignoredConfig": ignored,
						"client": map[string]interface{}{"name": "rocketmq-client-go", "version": clientVersion,
							"commit": clientCommit, "language": "GO"}})
				}
			} else if kind == "outcome" {
				a.answer(request)
			} else if kind == "stop" {
				break
			} else {
				a.sendError(fmt.Sprintf("unexpected request %v", kind))
			}
		}
		if err != nil {
			break
		}
	}
	a.releaseAll()
	if client != nil {
		client.Shutdown()
	}
	a.send(map[string]interface{}{"type": "stopped"})
}

func main() {
	protocolOut := os.Stdout
	os.Stdout = os.Stderr
	a := &adapter{out: bufio.NewWriter(protocolOut), waiting: map[int]chan map[string]interface{}{},
		released: map[int]bool{}, release: "RECONSUME_LATER"}
	a.serve(bufio.NewReader(os.Stdin))
}
