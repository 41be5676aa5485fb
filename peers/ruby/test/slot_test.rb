# frozen_string_literal: true

require_relative "test_helper"

class SlotTest < Minitest::Test
  def test_wait_returns_a_value_filled_from_another_thread
    slot = Acemq::Slot.new
    Thread.new { sleep 0.02; slot.fill(:v) }
    assert_equal [true, :v], slot.wait(1)
  end

  def test_wait_times_out_and_a_slot_fills_once
    slot = Acemq::Slot.new
    assert_equal [false, nil], slot.wait(0.01)
    assert slot.fill(1)
    refute slot.fill(2)
    assert_equal [true, 1], slot.wait(0)
  end
end
