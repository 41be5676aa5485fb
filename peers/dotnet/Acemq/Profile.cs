namespace Acemq;

/// <summary>
/// A released behaviour of this library that a binding can be opened with, so that
/// the incompatibilities history had can be reproduced on purpose.
/// </summary>
public enum Profile
{
    /// <summary>This version: the wire specification.</summary>
    Current,

    /// <summary>
    /// Both reply addresses, but a throwing handler sends no reply (retry policy, then
    /// <c>{queue}.dlq</c>) and the requester does not know <c>acemq-error</c>.
    /// </summary>
    V0_7_12,

    /// <summary>Behaves as <see cref="V0_7_12"/>.</summary>
    V0_5_0,

    /// <summary>Writes and reads only the native <c>reply_to</c>; failures as <see cref="V0_7_12"/>.</summary>
    V0_3_0,
}

public static class Profiles
{
    private static readonly (string Name, Profile Profile)[] Names =
    [
        ("current", Profile.Current),
        ("0.7.12", Profile.V0_7_12),
        ("0.5.0", Profile.V0_5_0),
        ("0.3.0", Profile.V0_3_0),
    ];

    public static IReadOnlyList<string> All { get; } = Names.Select(n => n.Name).ToArray();

    public static Profile Parse(string? name)
    {
        if (name is null)
        {
            return Profile.Current;
        }

        foreach (var (n, p) in Names)
        {
            if (n == name)
            {
                return p;
            }
        }

        throw new ArgumentException($"unknown profile '{name}' (known: {string.Join(", ", All)})", nameof(name));
    }

    public static string Name(this Profile profile) => Names.First(n => n.Profile == profile).Name;

    /// <summary>Before 0.7.13 a failing handler sent nothing and a requester ignored <c>acemq-error</c>.</summary>
    internal static bool KnowsErrorHeader(this Profile profile) => profile == Profile.Current;

    /// <summary>Up to 0.3.0 .NET used only the native <c>reply_to</c>.</summary>
    internal static bool NativeReplyToOnly(this Profile profile) => profile == Profile.V0_3_0;
}
