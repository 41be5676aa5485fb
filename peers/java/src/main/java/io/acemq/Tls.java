package io.acemq;

import com.rabbitmq.client.ConnectionFactory;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.net.InetAddress;
import java.net.Socket;
import java.net.UnknownHostException;
import java.security.cert.Certificate;
import java.security.cert.CertificateException;
import java.security.cert.CertificateFactory;
import java.security.cert.X509Certificate;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.regex.Pattern;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLEngine;
import javax.net.ssl.TrustManager;
import javax.net.ssl.TrustManagerFactory;
import javax.net.ssl.X509ExtendedTrustManager;

/**
 * TLS for the connections a {@link ConnectionFactory} opens, verified: the server's
 * certificate chain against the CA certificates of a PEM file (or the JVM's trust store), and
 * the host the factory connects to against the certificate's subjectAltName.
 *
 * <p>Why this class: amqp-client 5.0.0 given an {@code amqps://} URI, or {@code
 * useSslProtocol()}, trusts any certificate, and it has no host name check of its own (that
 * came in 5.4). Here the chain goes through the JDK's PKIX trust manager, and the host name
 * <em>as the URI gives it</em> is matched against the certificate's subjectAltName by the
 * trust manager itself ({@link #checkHost}): a name against its DNS entries, an IP literal
 * against its IP entries, whatever the client connects to. Not the JDK's endpoint
 * identification: the client connects an unconnected socket, and the JDK then checks the
 * address the name resolved to (a certificate naming only 127.0.0.1 passed for {@code
 * amqps://localhost}, and one naming only localhost failed). It works with {@code useNio()}
 * too.
 *
 * <pre>{@code
 * ConnectionFactory factory = new ConnectionFactory();
 * factory.setUri("amqps://app:secret@mq.internal:5671/orders");
 * Tls.verify(factory, Path.of("/etc/acemq/ca.pem"));
 * }</pre>
 */
public final class Tls {
    private Tls() {
    }

    /**
     * Makes every connection of {@code factory} TLS, trusting only the CA certificates in
     * {@code caFile} (PEM; one or more); a {@code null} file means the JVM's default trust
     * store. Call it after {@code setUri}: an {@code amqps} URI set later would not undo it,
     * but anything calling {@code useSslProtocol} afterwards would.
     *
     * @return {@code factory}, for chaining
     * @throws IOException when {@code caFile} cannot be read
     * @throws GeneralSecurityException when it holds no usable certificate
     */
    public static ConnectionFactory verify(ConnectionFactory factory, Path caFile)
            throws IOException, GeneralSecurityException {
        Objects.requireNonNull(factory, "factory");
        String host = factory.getHost();
        factory.useSslProtocol(caFile == null ? defaultContext(host) : context(caFile, host));
        return factory;
    }

    /** A TLS context whose trust managers accept exactly the chains ending at a CA of {@code caFile}. */
    public static SSLContext context(Path caFile) throws IOException, GeneralSecurityException {
        return context(caFile, null);
    }

    /**
     * The same, and the server's certificate must name {@code host} (null: no name check);
     * {@link #verify} passes the factory's host.
     */
    public static SSLContext context(Path caFile, String host) throws IOException, GeneralSecurityException {
        KeyStore trusted = KeyStore.getInstance(KeyStore.getDefaultType());
        trusted.load(null, null);
        int index = 0;
        for (Certificate authority : readCertificates(caFile)) {
            trusted.setCertificateEntry("ca-" + index++, authority);
        }
        return withTrust(trusted, host);
    }

    private static SSLContext defaultContext(String host) throws GeneralSecurityException {
        return withTrust(null, host); // null: the JVM's default trust store
    }

    private static SSLContext withTrust(KeyStore trusted, String host) throws GeneralSecurityException {
        TrustManagerFactory trust = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
        trust.init(trusted);
        TrustManager[] managers = trust.getTrustManagers();
        if (host != null) {
            for (int i = 0; i < managers.length; i++) {
                if (managers[i] instanceof X509ExtendedTrustManager chain) {
                    managers[i] = new NamedHostTrust(chain, host);
                }
            }
        }
        SSLContext context = SSLContext.getInstance("TLS");
        context.init(null, managers, null);
        return context;
    }

    /**
     * Whether {@code certificate} names {@code host} as a URI gives it: an IP literal (IPv4
     * dotted quad, or IPv6, bracketed or not) against the iPAddress entries of its
     * subjectAltName; anything else against its dNSName entries, without case, a wildcard
     * standing for exactly the leftmost label ({@code *.example.com}). The subject's CN is
     * not read (RFC 6125); a name is never resolved.
     *
     * @throws CertificateException naming the host and what the certificate names instead
     */
    public static void checkHost(X509Certificate certificate, String host) throws CertificateException {
        String wanted = host.startsWith("[") && host.endsWith("]") ? host.substring(1, host.length() - 1) : host;
        boolean literal = IPV4.matcher(wanted).matches() || wanted.contains(":");
        byte[] address = literal ? literalAddress(wanted) : null;
        List<String> named = new ArrayList<>();
        Collection<List<?>> entries = certificate.getSubjectAlternativeNames();
        for (List<?> entry : entries == null ? List.<List<?>>of() : entries) {
            int type = (Integer) entry.get(0);
            String value = String.valueOf(entry.get(1));
            if (type == 2) {
                named.add("DNS:" + value);
                if (!literal && dnsMatches(value, wanted)) {
                    return;
                }
            } else if (type == 7) {
                named.add("IP:" + value);
                if (literal && address != null && Arrays.equals(address, literalAddress(value))) {
                    return;
                }
            }
        }
        throw new CertificateException("the broker's certificate does not name " + host + " (the URL's host); it names "
                + (named.isEmpty() ? "nothing in subjectAltName" : String.join(", ", named)));
    }

    private static final Pattern IPV4 = Pattern.compile("\\d{1,3}(\\.\\d{1,3}){3}");

    private static byte[] literalAddress(String literal) {
        try {
            // A literal (checked above, or from the certificate) is parsed, never looked up.
            if (!IPV4.matcher(literal).matches() && !literal.contains(":")) {
                return null;
            }
            return InetAddress.getByName(literal).getAddress();
        } catch (UnknownHostException e) {
            return null;
        }
    }

    private static boolean dnsMatches(String pattern, String host) {
        String name = strip(host.toLowerCase(Locale.ROOT));
        String wanted = strip(pattern.toLowerCase(Locale.ROOT));
        if (wanted.startsWith("*.")) {
            int dot = name.indexOf('.');
            return dot > 0 && name.substring(dot).equals(wanted.substring(1)) && wanted.indexOf('.', 2) > 0;
        }
        return name.equals(wanted);
    }

    private static String strip(String name) {
        return name.endsWith(".") ? name.substring(0, name.length() - 1) : name;
    }

    /** The JDK's chain check, then the URI's host against the server's certificate. */
    private static final class NamedHostTrust extends X509ExtendedTrustManager {
        private final X509ExtendedTrustManager chain;
        private final String host;

        NamedHostTrust(X509ExtendedTrustManager chain, String host) {
            this.chain = chain;
            this.host = host;
        }

        @Override
        public void checkServerTrusted(X509Certificate[] certificates, String authType, Socket socket)
                throws CertificateException {
            chain.checkServerTrusted(certificates, authType, socket);
            checkHost(certificates[0], host);
        }

        @Override
        public void checkServerTrusted(X509Certificate[] certificates, String authType, SSLEngine engine)
                throws CertificateException {
            chain.checkServerTrusted(certificates, authType, engine);
            checkHost(certificates[0], host);
        }

        @Override
        public void checkServerTrusted(X509Certificate[] certificates, String authType) throws CertificateException {
            chain.checkServerTrusted(certificates, authType);
            checkHost(certificates[0], host);
        }

        @Override
        public void checkClientTrusted(X509Certificate[] certificates, String authType, Socket socket)
                throws CertificateException {
            chain.checkClientTrusted(certificates, authType, socket);
        }

        @Override
        public void checkClientTrusted(X509Certificate[] certificates, String authType, SSLEngine engine)
                throws CertificateException {
            chain.checkClientTrusted(certificates, authType, engine);
        }

        @Override
        public void checkClientTrusted(X509Certificate[] certificates, String authType) throws CertificateException {
            chain.checkClientTrusted(certificates, authType);
        }

        @Override
        public X509Certificate[] getAcceptedIssuers() {
            return chain.getAcceptedIssuers();
        }
    }

    /** The certificates of a PEM (or DER) file; none is an error, not an empty trust store. */
    static Collection<? extends Certificate> readCertificates(Path file) throws IOException, GeneralSecurityException {
        Collection<? extends Certificate> certificates;
        try (InputStream in = Files.newInputStream(file)) {
            certificates = CertificateFactory.getInstance("X.509").generateCertificates(in);
        }
        if (certificates.isEmpty()) {
            throw new GeneralSecurityException(file + " holds no certificate: give the CA certificate in PEM");
        }
        return certificates;
    }

}
