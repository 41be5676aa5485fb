namespace Acemq.Tests;

public class CatalogueTests
{
    [Fact]
    public void Every_profile_of_the_wire_spec_parses_and_round_trips()
    {
        Assert.Equal(["current", "0.7.12", "0.5.0", "0.3.0"], Profiles.All);
        foreach (var name in Profiles.All)
        {
            Assert.Equal(name, Profiles.Parse(name).Name());
        }

        Assert.Equal(Profile.Current, Profiles.Parse(null));
        Assert.Throws<ArgumentException>(() => Profiles.Parse("0.9.9"));
    }

    [Fact]
    public void Only_the_current_profile_knows_the_error_header()
    {
        Assert.True(Profile.Current.KnowsErrorHeader());
        Assert.False(Profile.V0_7_12.KnowsErrorHeader());
        Assert.False(Profile.V0_5_0.KnowsErrorHeader());
        Assert.False(Profile.V0_3_0.KnowsErrorHeader());
    }

    [Fact]
    public void Every_mutant_of_the_catalogue_parses_and_has_a_side()
    {
        Assert.Equal(30, Mutants.All.Count);
        Assert.Equal(Mutants.All.Count, Mutants.All.Distinct().Count());
        foreach (var name in Mutants.All)
        {
            var mutant = Mutants.Parse(name);
            Assert.Equal(name, mutant.Name());
            Assert.NotEqual(MutantSide.None, mutant.Side());
        }

        Assert.Equal(Mutant.None, Mutants.Parse(null));
        Assert.Throws<ArgumentException>(() => Mutants.Parse("no-such-mutant"));
    }

    [Fact]
    public void A_mutant_is_refused_on_the_wrong_side()
    {
        Mutants.EnsureSide(Mutant.GatherByCorrelationId, MutantSide.Requester);
        Mutants.EnsureSide(Mutant.None, MutantSide.Responder);
        Assert.Throws<ArgumentException>(() => Mutants.EnsureSide(Mutant.NoStrip, MutantSide.Requester));
        Assert.Throws<ArgumentException>(() => Mutants.EnsureSide(Mutant.StrictHeaderTypes, MutantSide.Requester));
        Assert.Throws<ArgumentException>(() => Mutants.EnsureSide(Mutant.NoEarlyResolve, MutantSide.Responder));
    }

    [Fact]
    public void Answered_after_publish_waits_the_catalogues_window()
    {
        Assert.Equal(TimeSpan.FromMilliseconds(1000), Responder.MutantDelay);
    }
}
