using System.Reflection;
using System.Text;
using Acemq.Peer;
using YamlDotNet.RepresentationModel;

namespace Acemq.Tests;

/// <summary>
/// The adapter's table (<see cref="PolicyTable"/>) against catalogue/catalogue.yaml: the
/// policy knobs and their defaults, every mutant's side and values, every profile of this peer.
/// </summary>
public class CatalogueTests
{
    private static readonly YamlMappingNode Root = Load();

    private static YamlMappingNode Map(YamlNode node, string key) => (YamlMappingNode)((YamlMappingNode)node)[key];

    private static IEnumerable<(string Key, YamlNode Value)> Entries(YamlNode node) =>
        ((YamlMappingNode)node).Children.Select(c => (((YamlScalarNode)c.Key).Value!, c.Value));

    [Theory]
    [InlineData("requester")]
    [InlineData("responder")]
    public void Policy_knobs_and_defaults_are_the_catalogues(string side)
    {
        var expected = Entries(Map(Root["policies"], side)).ToDictionary(e => e.Key, e => Text(((YamlMappingNode)e.Value)["default"]));
        Assert.Equal(expected, Describe(side == "requester" ? RequesterPolicy.Default : ResponderPolicy.Default));
    }

    [Fact]
    public void Every_mutant_has_the_catalogues_side_and_values_in_its_order()
    {
        var catalogue = Entries(Root["mutants"]).ToList();
        Assert.Equal(catalogue.Select(m => m.Key), PolicyTable.Mutants.Select(m => m.Name));
        foreach (var (name, entry) in catalogue)
        {
            var side = Text(((YamlMappingNode)entry)["side"]) == "responder" ? PolicyTable.Side.Responder : PolicyTable.Side.Requester;
            var expected = Entries(((YamlMappingNode)entry)["policy"]).ToDictionary(e => e.Key, e => Text(e.Value));
            Assert.Equal((name, side), (name, PolicyTable.Mutants.Single(m => m.Name == name).Side));
            var changed = side == PolicyTable.Side.Requester
                ? Changes(RequesterPolicy.Default, PolicyTable.Requester(null, name))
                : Changes(ResponderPolicy.Default, PolicyTable.Responder(null, name));
            Assert.Equal(Flat(name, expected), Flat(name, changed));
        }
    }

    [Fact]
    public void The_profiles_are_the_catalogues_for_this_peer()
    {
        var mine = Entries(Root["profiles"])
            .Where(p => p.Key == PolicyTable.Current || ((YamlMappingNode)Map(p.Value, "peers")).Children.ContainsKey(new YamlScalarNode(PeerHost.PeerName)))
            .ToList();
        Assert.Equal(mine.Select(p => p.Key).Order(), PolicyTable.Profiles.Select(p => p.Name).Order());
        foreach (var (name, profile) in mine)
        {
            var peers = Map(profile, "peers");
            var settings = peers.Children.TryGetValue(new YamlScalarNode(PeerHost.PeerName), out var s) ? (YamlMappingNode)s : new YamlMappingNode();
            Dictionary<string, string> Expected(string side) =>
                settings.Children.TryGetValue(new YamlScalarNode(side), out var values)
                    ? Entries(values).ToDictionary(e => e.Key, e => Text(e.Value))
                    : [];
            Assert.Equal(Flat(name, Expected("requester")), Flat(name, Changes(RequesterPolicy.Default, PolicyTable.Requester(name, null))));
            Assert.Equal(Flat(name, Expected("responder")), Flat(name, Changes(ResponderPolicy.Default, PolicyTable.Responder(name, null))));
        }
    }

    [Fact]
    public void Unknown_names_are_refused_naming_the_valid_ones()
    {
        var mutant = Assert.Throws<ArgumentException>(() => PolicyTable.Requester(null, "no-such-mutant"));
        Assert.Contains("native-only", mutant.Message);
        var profile = Assert.Throws<ArgumentException>(() => PolicyTable.Responder("0.9.9", null));
        Assert.Contains("0.7.12", profile.Message);
    }

    [Fact]
    public void A_mutant_of_the_other_side_runs_as_current_and_a_profile_combines_with_a_mutant()
    {
        Assert.Equal(RequesterPolicy.Default, PolicyTable.Requester(null, "no-strip"));
        Assert.Equal(ResponderPolicy.Default, PolicyTable.Responder("current", "stray-reply-to-oldest-gather"));
        var both = PolicyTable.Responder("0.7.12", "no-strip");
        Assert.Equal(HandlerFailure.Retry, both.HandlerFailure);
        Assert.False(both.StripEngineHeaders);
    }

    [Fact]
    public void The_new_mutants_set_their_knob_on_their_side_only()
    {
        // answered-after-publish counts on the confirm, with no window of its own added.
        Assert.Equal(AnsweredTiming.AfterConfirm, PolicyTable.Responder(null, "answered-after-publish").AnsweredTiming);
        Assert.Equal(RequestDeadline.Late, PolicyTable.Requester(null, "late-timeout").RequestDeadline);
        Assert.Equal(GatherDeadline.RestartPerReply, PolicyTable.Requester(null, "budget-restarts-per-reply").GatherDeadline);
        Assert.Equal(GatherFailureReply.Keep, PolicyTable.Requester(null, "gather-keeps-failures").GatherFailureReply);
        Assert.False(PolicyTable.Requester(null, "gather-failures-not-counted").CountGatherFailures);
        Assert.False(PolicyTable.Responder(null, "hides-acemq-headers").PassSpecHeaders);
        Assert.Equal(ResponderPolicy.Default, PolicyTable.Responder(null, "gather-keeps-failures"));
        Assert.Equal(RequesterPolicy.Default, PolicyTable.Requester(null, "hides-acemq-headers"));
    }

    [Fact]
    public void The_binding_source_names_no_mutant_and_no_profile()
    {
        var names = Entries(Root["mutants"]).Select(m => m.Key)
            .Concat(Entries(Root["profiles"]).Select(p => p.Key).Where(p => p != PolicyTable.Current))
            .ToList();
        var source = new DirectoryInfo(Path.Combine(Path.GetDirectoryName(Catalogue.File("catalogue.yaml"))!, "..", "peers", "dotnet", "Acemq"));
        var files = source.GetFiles("*.cs", SearchOption.AllDirectories).Where(f => !f.FullName.Contains($"{Path.DirectorySeparatorChar}obj{Path.DirectorySeparatorChar}")).ToList();
        Assert.NotEmpty(files);
        var found = files.SelectMany(f => names.Where(File.ReadAllText(f.FullName).Contains).Select(n => $"{f.Name}: {n}")).ToList();
        Assert.Empty(found);
    }

    /// <summary>A name and its settings as one comparable line, so a failure shows which entry.</summary>
    private static string Flat(string name, Dictionary<string, string> values) =>
        $"{name}: {string.Join(", ", values.OrderBy(v => v.Key, StringComparer.Ordinal).Select(v => $"{v.Key}={v.Value}"))}";

    /// <summary>The knobs whose value differs from <paramref name="before"/>, in the catalogue's spelling.</summary>
    private static Dictionary<string, string> Changes<T>(T before, T after)
    {
        var (a, b) = (Describe(before!), Describe(after!));
        return b.Where(kv => a[kv.Key] != kv.Value).ToDictionary();
    }

    /// <summary>A policy's fields as the catalogue spells them: snake_case names and values.</summary>
    private static Dictionary<string, string> Describe(object policy) =>
        policy.GetType().GetProperties(BindingFlags.Public | BindingFlags.Instance)
            .ToDictionary(p => Snake(p.Name), p => Value(p.GetValue(policy)));

    private static string Value(object? value) => value switch
    {
        bool b => b ? "true" : "false",
        int i => i.ToString(System.Globalization.CultureInfo.InvariantCulture),
        Enum e => Snake(e.ToString()),
        IEnumerable<ReplyToSource> order => $"[{string.Join(", ", order.Select(o => Snake(o.ToString())))}]",
        string text => text,
        null => "none",
        _ => throw new InvalidOperationException($"no catalogue spelling for {value}"),
    };

    private static string Text(YamlNode node) => node switch
    {
        YamlScalarNode scalar => scalar.Value!,
        YamlSequenceNode sequence => $"[{string.Join(", ", sequence.Children.Select(Text))}]",
        _ => throw new InvalidOperationException($"unexpected catalogue value {node}"),
    };

    private static string Snake(string pascal)
    {
        var text = new StringBuilder();
        foreach (var c in pascal)
        {
            if (char.IsUpper(c) && text.Length > 0)
            {
                text.Append('_');
            }

            text.Append(char.ToLowerInvariant(c));
        }

        return text.ToString();
    }

    private static YamlMappingNode Load()
    {
        var yaml = new YamlStream();
        using var reader = new StreamReader(Catalogue.File("catalogue.yaml"));
        yaml.Load(reader);
        return (YamlMappingNode)yaml.Documents[0].RootNode;
    }
}
