# frozen_string_literal: true

require_relative "test_helper"

# ConfirmedPublisher against a scripted channel: the test plays the broker's reader thread
# (returns, then acks or nacks by delivery tag) while several publishes are outstanding.
class PublisherTest < Minitest::Test
  ReturnInfo = Struct.new(:exchange, :routing_key, :reply_code, :reply_text, keyword_init: true)
  ReturnProps = Struct.new(:message_id, :correlation_id, keyword_init: true)

  # What the publisher uses of a Bunny channel in confirm mode.
  class ScriptedChannel
    Sent = Struct.new(:tag, :exchange, :routing_key, :properties)

    attr_reader :next_publish_seq_no, :sent

    def initialize
      @next_publish_seq_no = 0
      @exchanges = {}
      @sent = Queue.new # each publish as it leaves, so the test can wait for it
      @open = true
    end

    def confirm_select(callback)
      @next_publish_seq_no = 1
      @confirm = callback
    end

    def basic_publish(_payload, exchange, routing_key, properties)
      raise Bunny::ChannelAlreadyClosed.new("closed", self) unless @open

      @sent << Sent.new(@next_publish_seq_no, exchange, routing_key, properties)
      @next_publish_seq_no += 1
    end

    def find_exchange(name) = @exchanges[name]
    def register_exchange(exchange) = @exchanges[exchange.name] = exchange
    def default_exchange = Bunny::Exchange.default(self)
    def open? = @open
    def closed? = !@open
    def close = @open = false

    # The broker's side, in its order: a return comes before the ack of the same publish.
    def return!(sent)
      info = ReturnInfo.new(exchange: sent.exchange, routing_key: sent.routing_key.b, reply_code: 312, reply_text: "NO_ROUTE".b)
      props = ReturnProps.new(message_id: sent.properties[:message_id]&.b, correlation_id: sent.properties[:correlation_id]&.b)
      @exchanges.fetch(sent.exchange).handle_return(info, props, "")
    end

    def ack!(tag, multiple: false) = @confirm.call(tag, multiple, false)
    def nack!(tag) = @confirm.call(tag, false, true)
  end

  FakeConnection = Struct.new(:channel) do
    def create_channel = channel
    def open? = true
  end

  def setup
    @channel = ScriptedChannel.new
  end

  def publisher = Acemq::ConfirmedPublisher.new(FakeConnection.new(@channel))

  # Starts one publish per id, each in its own thread, and waits until each has left:
  # [[thread whose value is :delivered or the error, what was sent], ...] in tag order.
  def publish_all(publisher, ids)
    ids.map do |id|
      call = Thread.new do
        publisher.publish("{}", exchange: "", routing_key: "q", message_id: id, correlation_id: id)
        :delivered
      rescue Acemq::Error => e
        e
      end
      [call, @channel.sent.pop]
    end
  end

  def test_many_publishes_outstanding_and_a_return_ends_only_its_own
    a, b, c = publish_all(publisher, %w[a b c])
    assert_equal [1, 2, 3], [a, b, c].map { |_, sent| sent.tag }

    @channel.return!(b.last)
    [a, b, c].each { |_, sent| @channel.ack!(sent.tag) }

    assert_equal :delivered, a.first.value
    assert_instance_of Acemq::PublishReturned, b.first.value
    assert_match(/312 NO_ROUTE/, b.first.value.message)
    assert_equal :delivered, c.first.value
  end

  def test_a_multiple_ack_settles_every_tag_up_to_it
    a, b, c = publish_all(publisher, %w[a b c])
    @channel.return!(a.last)
    @channel.ack!(3, multiple: true)

    assert_instance_of Acemq::PublishReturned, a.first.value
    assert_equal %i[delivered delivered], [b.first.value, c.first.value]
  end

  def test_a_nack_fails_only_its_publish
    a, b = publish_all(publisher, %w[a b])
    @channel.nack!(1)
    @channel.ack!(2)

    assert_instance_of Acemq::PublishFailed, a.first.value
    assert_equal :delivered, b.first.value
  end

  def test_of_identical_publishes_a_return_marks_one
    first, other, twin = publish_all(publisher, %w[same other same])
    @channel.return!(twin.last)
    [1, 2, 3].each { |tag| @channel.ack!(tag) }

    outcomes = [first, twin].map { |call, _| call.value }
    assert_equal 1, outcomes.count(:delivered), "exactly one of the look-alikes is returned"
    assert_equal :delivered, other.first.value
  end

  def test_the_channel_closing_fails_what_is_outstanding
    calls = publish_all(publisher, %w[a b])
    @channel.close

    calls.each do |call, _|
      assert_instance_of Acemq::PublishFailed, call.value
      assert_match(/channel closed/, call.value.message)
    end
  end

  # RR-20: a publish unconfirmed at the loss is not sent as far as its caller knows; none
  # is tried until Bunny has recovered; then a new channel (Bunny's recovered confirm
  # channel offsets its delivery tags, which its multiple-ack arithmetic does not).
  def test_a_lost_connection_ends_what_is_outstanding_and_a_new_channel_follows_the_recovery
    channels = [@channel, ScriptedChannel.new]
    connection = Struct.new(:channels) do
      def create_channel = channels.shift
      def open? = true
    end.new(channels.dup)
    p = Acemq::ConfirmedPublisher.new(connection)
    calls = publish_all(p, %w[a b])
    p.send(:connection_lost, "320 CONNECTION_FORCED - Closed via management plugin", true)
    calls.each do |call, _|
      assert_instance_of Acemq::ConnectionLost, call.value
      assert_equal "320 CONNECTION_FORCED - Closed via management plugin", call.value.reason
    end
    assert_raises(Acemq::ConnectionLost) { p.publish("{}", exchange: "", routing_key: "q", message_id: "c") }
    assert @channel.sent.empty?, "nothing was sent while the connection was down"

    p.send(:connection_recovered)
    @channel = channels.last
    (call, sent), = publish_all(p, %w[d])
    @channel.ack!(sent.tag)
    assert_equal [:delivered, 1], [call.value, sent.tag]
    refute channels.first.open?, "the recovered old channel is closed"
  end

  # Elements that note, when compared, whether the comparing thread holds the lock.
  Tag = Struct.new(:n, :lock, :seen) do
    def <=>(other)
      seen << lock.owned?
      n <=> other.n
    end
  end

  def test_bunny_2_19_0_reads_the_unconfirmed_minimum_under_its_lock
    skip "only Bunny #{Acemq::ConfirmedPublisher::LockedMin::AFFECTED} has the race" unless Bunny::VERSION == Acemq::ConfirmedPublisher::LockedMin::AFFECTED

    lock = Mutex.new
    seen = []
    channel = Object.new
    channel.instance_variable_set(:@unconfirmed_set, Set[Tag.new(2, lock, seen), Tag.new(1, lock, seen)])
    channel.instance_variable_set(:@unconfirmed_set_mutex, lock)
    Acemq::ConfirmedPublisher::LockedMin.guard(channel)

    assert_equal 1, channel.instance_variable_get(:@unconfirmed_set).min.n
    refute_empty seen
    assert seen.all?, "every comparison of Set#min ran under the set's lock"
    refute lock.locked?
  end
end
