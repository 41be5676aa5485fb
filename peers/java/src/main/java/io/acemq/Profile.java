package io.acemq;

/**
 * The behaviour of an earlier acemq-java release, so a suite can reproduce the history.
 *
 * <p>Up to 0.3.0 the Java library wrote and read only the native {@code reply_to}; since 0.5.0
 * it writes both places and reads the header first.
 */
public enum Profile {
    CURRENT("current", true),
    V0_5_0("0.5.0", true),
    V0_3_0("0.3.0", false);

    private final String wireName;
    private final boolean usesReplyToHeader;

    Profile(String wireName, boolean usesReplyToHeader) {
        this.wireName = wireName;
        this.usesReplyToHeader = usesReplyToHeader;
    }

    public String wireName() {
        return wireName;
    }

    /** Whether requests carry, and responders look at, the {@code acemq-reply-to} header. */
    public boolean usesReplyToHeader() {
        return usesReplyToHeader;
    }

    /** The profile for a name such as {@code "0.3.0"}; {@code null} means current. */
    public static Profile fromWireName(String name) {
        if (name == null) {
            return CURRENT;
        }
        for (Profile profile : values()) {
            if (profile.wireName.equals(name)) {
                return profile;
            }
        }
        throw new IllegalArgumentException("unknown profile '" + name + "'");
    }
}
