# frozen_string_literal: true

require "bunny"
require "openssl"

module Acemq
  # Opening the Bunny session the binding's classes are given. Requester and Responder
  # take any started session; this is the binding's way to open one on a list of broker
  # nodes, under a connection name, with automatic recovery, and with TLS.
  module Connection
    # Bunny's automatic recovery, for a network failure and for a connection the broker
    # closed alike, trying again every half second (Bunny tries the node after the lost one
    # first; with one node its first try finds the list used up, so the node is tried again
    # a second after the loss), the nodes in the order given.
    RECOVERY = {
      automatically_recover: true, recover_from_connection_close: true, network_recovery_interval: 0.5,
      hosts_shuffle_strategy: ->(addresses) { addresses }
    }.freeze

    module_function

    # A started Bunny session to urls: one amqp:// or amqps:// URL, or a list of them (the
    # nodes of one cluster: the same scheme, credentials and vhost, the preferred node
    # first). connection_name is the name the broker shows (the client property
    # connection_name), on the first connection and on every recovery. The session
    # recovers (RECOVERY) unless options say otherwise; options go to Bunny.new as they are.
    #
    # With ca_file (amqps:// only) the broker's certificate chain must lead to a CA
    # certificate in that PEM file (the system's store is not consulted) and the certificate
    # must name the node's host, a DNS name or an IP address in its subjectAltName; no
    # client certificate is sent (the TLS settings win over any given in options). A failed
    # TLS handshake raises ConnectionFailed naming the broker's address, not the URL.
    def open(urls, ca_file: nil, connection_name: nil, **options)
      urls = Array(urls)
      raise ConnectionSettingsError, "no broker URL given" if urls.empty?

      tls = ca_file ? tls_options(urls.first, ca_file) : {}
      options = RECOVERY.merge(options, tls)
      options[:connection_name] = connection_name if connection_name
      session = Bunny.new(*settings(urls), options)
      begin
        session.start
      rescue OpenSSL::SSL::SSLError => e
        # Bunny leaves the socket of a failed handshake open.
        session.transport&.close
        raise ConnectionFailed, "TLS connection to #{session.host}:#{session.port} failed: #{e.message}"
      end
    end

    # What Bunny.new is given for urls: one URL as it is; several as the first one's
    # settings with every URL's host and port as Bunny's addresses.
    def settings(urls)
      return [urls.first] if urls.size == 1

      parsed = urls.map { |url| Bunny::Session.parse_uri(url) }
      common = parsed.map { |settings| settings.reject { |key, _| %i[host port].include?(key) } }
      unless common.uniq.size == 1
        raise ConnectionSettingsError, "the broker URLs differ in more than host and port (scheme, credentials, vhost or options)"
      end

      [common.first.merge(addresses: parsed.map { |settings| "#{settings[:host]}:#{settings[:port]}" })]
    end

    # The Bunny options for ca_file: TLS on, the peer verified (chain and host name, by
    # OpenSSL's post-connection check), a store holding only ca_file's certificates.
    def tls_options(url, ca_file)
      scheme = url.to_s[/\A([a-z][a-z0-9+.-]*):/i, 1]
      raise ConnectionSettingsError, "a CA file was given for an #{scheme}:// URL; use amqps:// to connect with TLS" unless scheme == "amqps"

      store = OpenSSL::X509::Store.new
      certificates(ca_file).each { |certificate| store.add_cert(certificate) }
      # The warnings silenced are "no client certificate" (none is wanted) and "peer
      # verification disabled" (it never is here).
      { tls: true, verify_peer: true, tls_certificate_store: store, tls_silence_warnings: true }
    end

    def certificates(ca_file)
      pem = begin
        File.read(ca_file)
      rescue SystemCallError => e
        raise ConnectionSettingsError, "cannot read the CA file: #{e.message}"
      end
      found = pem.include?("-----BEGIN CERTIFICATE-----") ? OpenSSL::X509::Certificate.load(pem) : []
      raise ConnectionSettingsError, "#{ca_file} holds no PEM certificate; give the CA certificate that signed the broker's" if found.empty?

      found
    rescue OpenSSL::X509::CertificateError => e
      raise ConnectionSettingsError, "#{ca_file} is not a readable PEM certificate: #{e.message}"
    end
  end
end
