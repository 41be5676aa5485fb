# frozen_string_literal: true

require "bunny"
require "openssl"

module Acemq
  # Opening the Bunny session the binding's classes are given. Requester and Responder
  # take any started session; this is the one way the binding knows to open one with TLS.
  module Connection
    module_function

    # A started Bunny session to url. With ca_file (an amqps:// URL only) the broker's
    # certificate chain must lead to a CA certificate in that PEM file (the system's
    # store is not consulted) and the certificate must name the URL's host, a DNS name or
    # an IP address in its subjectAltName; no client certificate is sent. options go to
    # Bunny.new as they are (the TLS settings win over any given there). A failed TLS
    # handshake raises ConnectionFailed naming the broker's address, not the URL.
    def open(url, ca_file: nil, **options)
      tls = ca_file ? tls_options(url, ca_file) : {}
      session = Bunny.new(url, options.merge(tls))
      begin
        session.start
      rescue OpenSSL::SSL::SSLError => e
        # Bunny leaves the socket of a failed handshake open.
        session.transport&.close
        raise ConnectionFailed, "TLS connection to #{session.host}:#{session.port} failed: #{e.message}"
      end
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
