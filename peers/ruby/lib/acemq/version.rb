# frozen_string_literal: true

module Acemq
  VERSION = "0.9.0"
end
